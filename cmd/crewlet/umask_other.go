//go:build !unix

package main

// ownerOnlyFiles has no umask to set off unix; the files keep the modes
// their creators give them.
func ownerOnlyFiles() {}
