//go:build !(linux || darwin || freebsd)

package broker

import "errors"

// statfsFree cannot read a volume's free space on this platform: the
// sizing then has no volume figure, and stream.store_max_bytes should be
// set.
func statfsFree(string) (int64, error) {
	return 0, errors.New("broker: the free space of a volume cannot be read on this platform; set stream.store_max_bytes")
}
