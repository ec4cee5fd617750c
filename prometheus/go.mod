module github.com/slotted-go/slotted/prometheus

go 1.26.0

replace github.com/slotted-go/slotted => ../

require (
	github.com/ncruces/go-sqlite3 v0.24.0
	github.com/ncruces/go-sqlite3/gormlite v0.24.0
	github.com/prometheus/client_golang v1.25.0
	github.com/slotted-go/slotted v0.0.0-00010101000000-000000000000
	gorm.io/gorm v1.31.2
	gorm.io/plugin/prometheus v0.1.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/ncruces/julianday v1.0.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/tetratelabs/wazero v1.9.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
