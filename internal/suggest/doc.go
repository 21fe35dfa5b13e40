// Package suggest finds the nearest of a set of names to a misspelt one,
// for "did you mean" hints in errors: config keys, flags and SQL names.
package suggest
