package meta

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/slotted-go/slotted/internal/bucketing"

	"github.com/slotted-go/slotted/internal/errs"
)

// tagOptions is a parsed `slotted:"..."` struct tag:
//
//	slotted:"likes"                       counter named likes, record_type "<table>.likes"
//	slotted:"likes;type:post_likes"       fixed record_type, so renaming the table keeps the counts
//	slotted:"likes;slots:16"              16 slot rows instead of Config.Slots
//	slotted:"likes;cache:likes_count"     RollUp writes the total into the posts.likes_count column
//	slotted:"views;buckets:day"           also counted per day (hour, day, month; bucket.go)
//	slotted:"views;buckets:day;tz:Europe/Berlin;keep:90"   days of Berlin, 90 of them kept
//	slotted:""                            name taken from the field's column name (Likes -> likes)
//	slotted:"views;window:7d"             not a counter: views over a Window, filled beside it (window.go)
//	slotted:"views;series:7d"             not a counter: views day by day ([]Bucket)
//	slotted:"likes;applied"               not a counter: whether WithOnceKey's key was applied (bool)
//
// Options are separated by ';' and written key:value, as in gorm tags.
type tagOptions struct {
	name          string
	recordType    string
	slots         int
	cache         string
	bucketing.Tag // buckets:, tz:, keep: (internal/bucketing)
}

func parseTag(tag string) (tagOptions, error) {
	var o tagOptions
	for i, part := range strings.Split(tag, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, value, hasValue := strings.Cut(part, ":")
		if !hasValue {
			if i != 0 {
				return o, fmt.Errorf("%w: tag %q: option %q needs a value (key:value)", errs.ErrInvalidConfig, tag, part)
			}
			o.name = part
			continue
		}
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(value)
		switch key {
		case "type":
			if value == "" || len(value) > errs.MaxKeyLen {
				return o, fmt.Errorf("%w: tag %q: type must be 1..%d bytes", errs.ErrInvalidConfig, tag, errs.MaxKeyLen)
			}
			o.recordType = value
		case "slots":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 || n > errs.MaxSlots {
				return o, fmt.Errorf("%w: tag %q: slots must be 1..%d", errs.ErrInvalidConfig, tag, errs.MaxSlots)
			}
			o.slots = n
		case "cache":
			o.cache = value
		case "buckets", "tz", "keep":
			if err := o.Tag.Parse(tag, key, value); err != nil {
				return o, err
			}
		default:
			return o, fmt.Errorf("%w: tag %q: unknown option %q (want type, slots, cache, buckets, tz, keep)", errs.ErrInvalidConfig, tag, key)
		}
	}
	return o, nil
}
