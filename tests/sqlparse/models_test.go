package sqlparse

import (
	"gorm.io/gorm"
)

// The models cover each shape of counter the plugin renders differently:
// integer and string keys, a fixed record_type, several counters per model,
// cache columns (RollUp), soft deletes, and a has-many for Preload.

type Author struct {
	ID    uint
	Name  string
	Posts []Post
}

type Post struct {
	ID       uint
	AuthorID uint
	Title    string
	Likes    int64 `gorm:"-" slotted:"likes"`
	Views    int64 `gorm:"-" slotted:"views;slots:4"`
	Stars    int   `gorm:"-" slotted:"stars;type:post_stars"`
}

type Article struct {
	ID          uint
	Title       string
	Likes       int64 `gorm:"-" slotted:"likes;cache:likes_count"`
	Shares      int64 `gorm:"-" slotted:"shares;cache:shares_count"`
	LikesCount  int64
	SharesCount int64
	DeletedAt   gorm.DeletedAt `gorm:"index"`
}

type Tag struct {
	Name string `gorm:"primaryKey;size:64"`
	Uses int64  `gorm:"-" slotted:"uses;slots:1"`
}

var models = []any{&Author{}, &Post{}, &Article{}, &Tag{}}
