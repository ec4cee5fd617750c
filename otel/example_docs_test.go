package slottedotel_test

import (
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
	slottedotel "github.com/slotted-go/slotted/otel"
)

// The ```go block of docs/production.md on OpenTelemetry, compiled (not run):
// docs/README.md says how blocks are tied to functions.
func Example_docProductionObserver() {
	var (
		db  *gorm.DB        // opened with your driver
		buf *slotted.Buffer // slotted.NewBuffer(db, ...)
	)
	obs, err := slottedotel.New(slottedotel.Options{}) // the global MeterProvider and TracerProvider, or set them
	db.Use(slotted.New(slotted.Config{Observer: obs}))
	reg, err := obs.Watch(db)                  // asynchronous instruments over slotted.StatsOf(db)
	breg, err := obs.WatchBuffer(buf, "views") // and over a Buffer's Stats
	_, _, _ = reg, breg, err
}
