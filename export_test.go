package slotted

// Retryable exposes the retry classifier to the black-box tests, which feed it real driver errors.
var Retryable = func(err error) bool { return ConflictOf(err) != NoConflict }
