package slotted_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/slotted-go/slotted"
)

// CausalReads only changes reads on Galera (tests/galera_test.go covers that
// on a real cluster); anywhere else the statements stay as they are.
func TestCausalReadsOnlyOnGalera(t *testing.T) {
	db, log := dryDB(t, slotted.Config{CausalReads: true})
	// DryRun renders and logs the reads, and reports that nothing was read.
	if _, err := slotted.CountRef(db, slotted.Ref{Type: "posts.likes", ID: "1"}); !errors.Is(err, slotted.ErrDryRun) {
		t.Fatal(err)
	}
	if err := slotted.Load(db, &[]post{{ID: 1}, {ID: 2}}); !errors.Is(err, slotted.ErrDryRun) {
		t.Fatal(err)
	}
	if len(log.sql) != 2 {
		t.Fatalf("want the sum and the batched read, got %q", log.sql)
	}
	for _, s := range log.sql {
		if strings.Contains(s, "wsrep") {
			t.Errorf("a causal wait outside Galera: %q", s)
		}
	}
}
