//go:build unix

package main

import "syscall"

// ownerOnlyFiles sets the process umask to 077: every file this process
// creates is 0600 at most and every directory 0700, whatever mode its
// creator asked for.
func ownerOnlyFiles() { syscall.Umask(0o077) }
