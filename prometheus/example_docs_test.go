package slottedprom_test

import (
	"gorm.io/gorm"
	gormprom "gorm.io/plugin/prometheus"

	"github.com/slotted-go/slotted"
	slottedprom "github.com/slotted-go/slotted/prometheus"
)

// The ```go block of docs/production.md on Prometheus, compiled (not run):
// docs/README.md says how blocks are tied to functions.
func Example_docProductionCollector() {
	var (
		db  *gorm.DB        // opened with your driver
		buf *slotted.Buffer // slotted.NewBuffer(db, ...)
	)
	c := slottedprom.New(db, slottedprom.Options{})
	db.Use(gormprom.New(gormprom.Config{DBName: "app", MetricsCollector: []gormprom.MetricsCollector{c}}))
	c.WatchBuffer(buf, "views")
	// or without gorm's plugin: prometheus.MustRegister(c)
}
