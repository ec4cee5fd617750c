module github.com/slotted-go/slotted

go 1.25.0

require gorm.io/gorm v1.31.2

require (
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	golang.org/x/text v0.20.0 // indirect
)
