// Package suggest finds the nearest of a set of names to one that matched
// none of them, for "did you mean" hints in errors.
package suggest
