package tests

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

// TestErrorsBoundCallersInput: an error quotes at most a short prefix of a
// client's input, so a 1 MB window spec does not make a 1 MB message, and it
// stays errors.Is-able.
func TestErrorsBoundCallersInput(t *testing.T) {
	huge := "7" + strings.Repeat("x", 1<<20)
	_, err := slotted.ParseWindow(huge)
	require.ErrorIs(t, err, slotted.ErrInvalidArgument)
	require.Less(t, len(err.Error()), 300, "ParseWindow's error quotes the whole input")
	require.Contains(t, err.Error(), `"7xxx`, "it still shows the input's start")
	require.Contains(t, err.Error(), "1048577 bytes")

	testEachDB(t, func(t *testing.T, db *gorm.DB) {
		var posts []Post
		err := db.Scopes(slotted.OrderBy(&Post{}, "likes", huge)).Find(&posts).Error
		require.ErrorIs(t, err, slotted.ErrInvalidArgument)
		require.Less(t, len(err.Error()), 300, "OrderBy's direction")
		err = db.Scopes(slotted.WhereCounter(&Post{}, "likes", huge, 1)).Find(&posts).Error
		require.ErrorIs(t, err, slotted.ErrInvalidArgument)
		require.Less(t, len(err.Error()), 300, "WhereCounter's comparison")
	})
}
