package slotted_test

import (
	"testing"

	"github.com/slotted-go/slotted"
)

// TestOutcomeMarkersDefault: markers are on unless DisableOutcomeMarkers, and
// the opt-in field of old still means on.
func TestOutcomeMarkersDefault(t *testing.T) {
	for _, c := range []struct {
		cfg  slotted.Config
		want bool
	}{
		{slotted.Config{}, true},
		{slotted.Config{OutcomeMarkers: true}, true},
		{slotted.Config{DisableOutcomeMarkers: true}, false},
	} {
		db, _ := dryDB(t, c.cfg)
		p, ok := db.Config.Plugins[(&slotted.Plugin{}).Name()].(*slotted.Plugin)
		if !ok {
			t.Fatal("plugin not registered")
		}
		if got := p.Config(); got.OutcomeMarkers != c.want || got.DisableOutcomeMarkers == c.want {
			t.Errorf("%+v: OutcomeMarkers %v, DisableOutcomeMarkers %v; want markers %v", c.cfg, got.OutcomeMarkers, got.DisableOutcomeMarkers, c.want)
		}
	}
}
