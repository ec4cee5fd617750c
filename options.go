package slotted

import "fmt"

// Options, one style for the whole API (as gorm's own gorm.Config and
// gorm.Session): Config configures the plugin once, at db.Use; every per-call
// setting is a struct named after its call (FixOptions, CacheOptions,
// OnceOptions, ...), passed as the call's last argument, which may be left
// out. The zero value of each is the documented default, and the fields
// BatchSize, After and Progress mean the same wherever they appear.

// optionsOf returns a call's options: the zero value when the caller passed
// none. The argument is variadic only so that it can be left out; a second
// value would be ambiguous (merge it? last wins?), so it is refused before
// anything is sent.
func optionsOf[O any](opts []O) (O, error) {
	var o O
	switch len(opts) {
	case 0:
		return o, nil
	case 1:
		return opts[0], nil
	}
	return o, fmt.Errorf("%w: %d %T values given; pass at most one", ErrInvalidConfig, len(opts), o)
}
