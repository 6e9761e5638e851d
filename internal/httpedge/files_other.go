//go:build !unix

package httpedge

// openFileLimit is unknown off unix: the cap stands as configured.
func openFileLimit() uint64 { return 0 }
