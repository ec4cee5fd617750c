package slotted

// Retryable exposes the retry classifier to the black-box tests, which feed it real driver errors.
var Retryable = retryable
