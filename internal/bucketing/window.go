package bucketing

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slotted-go/slotted/internal/errs"
)

type windowKind uint8

const (
	winToday windowKind = iota + 1
	winDays
	winHours
	winWeek
	winMonth
	winBuckets
)

// Window is a period of a bucketed counter stated in its buckets, resolved
// when it is read: at Config.Now, in the counter's time zone. The zero Window
// is invalid. Windows that are calendar periods (Today, ThisWeek, ThisMonth)
// are whole, so buckets after now are in them and read 0; the Last* windows
// end with the bucket holding now, which is counted as far as it has gone.
type Window struct {
	kind windowKind
	n    int
}

// Today is the counter's current day, midnight to midnight in its zone (23
// or 25 hours on the days daylight saving time begins or ends).
func Today() Window { return Window{kind: winToday, n: 1} }

// LastDays is the n days ending with today, today included: LastDays(7) on
// a Sunday is Monday to Sunday. n must be 1..MaxWindowBuckets.
func LastDays(n int) Window { return Window{kind: winDays, n: n} }

// LastHours is the n hours ending with the current one (of an hour counter),
// the current one included. n must be 1..MaxWindowBuckets.
func LastHours(n int) Window { return Window{kind: winHours, n: n} }

// ThisWeek is the current ISO week, Monday 00:00 to the next Monday 00:00 in
// the counter's zone.
func ThisWeek() Window { return Window{kind: winWeek, n: 1} }

// ThisMonth is the current calendar month in the counter's zone.
func ThisMonth() Window { return Window{kind: winMonth, n: 1} }

// LastBuckets is the n most recent buckets of the counter, whatever its
// unit, the current one included. n must be 1..MaxWindowBuckets.
func LastBuckets(n int) Window { return Window{kind: winBuckets, n: n} }

// String returns the window in the form ParseWindow reads: "today", "7d",
// "24h", "week", "month", "30b".
func (w Window) String() string {
	switch w.kind {
	case winToday:
		return "today"
	case winDays:
		return strconv.Itoa(w.n) + "d"
	case winHours:
		return strconv.Itoa(w.n) + "h"
	case winWeek:
		return "week"
	case winMonth:
		return "month"
	case winBuckets:
		return strconv.Itoa(w.n) + "b"
	}
	return "invalid"
}

// ParseWindow reads a window as String writes it (the window: and series:
// tag options use it): "today", "week", "month", or a number followed by d
// (LastDays), h (LastHours) or b (LastBuckets).
func ParseWindow(s string) (Window, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "today":
		return Today(), nil
	case "week":
		return ThisWeek(), nil
	case "month":
		return ThisMonth(), nil
	}
	s = strings.TrimSpace(s)
	if len(s) >= 2 {
		n, err := strconv.Atoi(s[:len(s)-1])
		if err == nil && n >= 1 && n <= MaxWindowBuckets {
			switch s[len(s)-1] {
			case 'd', 'D':
				return LastDays(n), nil
			case 'h', 'H':
				return LastHours(n), nil
			case 'b', 'B':
				return LastBuckets(n), nil
			}
		}
	}
	return Window{}, fmt.Errorf("%w: window %s (want today, week, month, or Nd, Nh, Nb with N in 1..%d)", errs.ErrInvalidArgument, errs.Quote(s), MaxWindowBuckets)
}

// Buckets resolves the window for a counter at now: its buckets, oldest
// first, or errs.ErrInvalidArgument when they are not whole buckets of the
// counter, or errs.ErrPastRetention.
func (w Window) Buckets(b *Scheme, now time.Time) ([]Bucket, error) {
	if w.kind == 0 {
		return nil, fmt.Errorf("%w: the zero Window", errs.ErrInvalidArgument)
	}
	if w.n < 1 || w.n > MaxWindowBuckets {
		return nil, fmt.Errorf("%w: window %s: n must be 1..%d", errs.ErrInvalidArgument, w, MaxWindowBuckets)
	}
	y, m, d := now.In(b.Loc).Date()
	var from, to time.Time
	switch w.kind {
	case winToday:
		from, to = DayStart(y, m, d, b.Loc), DayStart(y, m, d+1, b.Loc)
	case winDays:
		from, to = DayStart(y, m, d-w.n+1, b.Loc), DayStart(y, m, d+1, b.Loc)
	case winWeek:
		wk := WeekOf(now, b.Loc)
		from, to = wk.Start, wk.End
	case winMonth:
		from, to = DayStart(y, m, 1, b.Loc), DayStart(y, m+1, 1, b.Loc)
	case winHours, winBuckets:
		unit := b
		if w.kind == winHours {
			unit = &Scheme{Unit: Hourly, Loc: b.Loc}
		}
		cur := unit.Of(now)
		from, to = unit.Back(cur, w.n-1).Start, cur.End
	}
	if b.Of(from).Start.Compare(from) != 0 || b.Of(to).Start.Compare(to) != 0 {
		return nil, fmt.Errorf("%w: window %s is not made of whole %s buckets", errs.ErrInvalidArgument, w, b.Unit)
	}
	out, err := b.Between(from, to)
	if err != nil {
		return nil, err
	}
	return out, b.Retained(out, now)
}
