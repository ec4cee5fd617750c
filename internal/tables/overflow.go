package tables

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/slotted-go/slotted/internal/errs"
)

// A counter lives in int64, and nothing the plugin does may wrap it around or
// change its type:
//
//	a write   MySQL (1690) and PostgreSQL (22003) refuse an upsert that would
//	          take a slot past int64; SQLite would silently store the slot as
//	          a REAL, so there every upsert's update checks the sum and raises
//	          "integer overflow" itself (addExpr: CASE WHEN typeof(sum) =
//	          'integer' THEN sum ELSE abs(min int64) END). Each way the
//	          statement fails as a whole, so a multi-row upsert (a coalesced
//	          batch, a bulk write, a bucketed counter's two rows, AddWhere,
//	          a Buffer's flush) writes none of its rows; a bulk write of
//	          several statements runs them in one transaction. The caller gets
//	          errs.ErrOverflow; a coalesced batch's callers write alone then, so
//	          only the overflowing counter's callers get it (coalesce.go), and
//	          a Buffer's flush goes row by row, dropping only that counter's
//	          delta (writebehind.go).
//	Compact   sums locked slot rows in Go, exactly (sumExact); a counter whose
//	          total does not fit is refused (Compact) or left as it is (CompactAll).
//	a read    MySQL's SUM is DECIMAL and PostgreSQL's numeric, so a total past
//	          int64 arrives as text (total.Scan); SQLite's SUM raises "integer
//	          overflow". Both are errs.ErrOverflow.

// Overflowed wraps a database's integer-overflow error in errs.ErrOverflow and
// returns any other error as it is. Only the plugin's own statements go
// through it, so the codes cannot come from anything else.
func Overflowed(err error) error {
	if err == nil || errors.Is(err, errs.ErrOverflow) || !isOverflow(err) {
		return err
	}
	return fmt.Errorf("%w: %w", errs.ErrOverflow, err)
}

func isOverflow(err error) bool {
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		return state.SQLState() == "22003" // numeric_value_out_of_range
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.HasPrefix(e.Error(), "Error 1690 ") { // go-sql-driver/mysql: "Error 1690 (22003): BIGINT value is out of range ..."
			return true
		}
	}
	return strings.Contains(err.Error(), "integer overflow") // SQLite's SUM, and addExpr's check
}

// SumExact adds counts as if with unbounded integers: ok is false when the
// total does not fit in int64. A running sum may wrap on the way (MaxInt64,
// 5, -10 totals MaxInt64-5): carry counts the wraps, and the total fits
// exactly when they cancel out.
func SumExact(rows []Counter) (sum int64, ok bool) {
	var carry int
	for _, r := range rows {
		next := sum + r.Count
		switch {
		case r.Count > 0 && next < sum:
			carry++
		case r.Count < 0 && next > sum:
			carry--
		}
		sum = next
	}
	return sum, carry == 0
}

// Total scans a SUM of bigint counts: an integer on SQLite, DECIMAL text on
// MySQL/MariaDB, numeric text on PostgreSQL. A Total past int64 is errs.ErrOverflow,
// not a driver's conversion error.
type Total int64

func (t *Total) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*t = Total(v)
	case nil:
		*t = 0
	case []byte:
		return t.parse(string(v))
	case string:
		return t.parse(v)
	case float64: // a slot SQLite turned into a REAL before writes were checked
		if v != math.Trunc(v) || v < math.MinInt64 || v >= math.MaxInt64 {
			return fmt.Errorf("%w: total %g", errs.ErrOverflow, v)
		}
		*t = Total(v)
	default:
		return fmt.Errorf("slotted: unexpected %T for a total", src)
	}
	return nil
}

func (t *Total) parse(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%w: total %s", errs.ErrOverflow, s)
	}
	*t = Total(n)
	return err
}
