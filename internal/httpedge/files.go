package httpedge

import "fmt"

// ReservedFiles are the descriptors the connection cap leaves to the node
// itself: the broker's store files, routes and clients, the store's
// connections and the estate's.
const ReservedFiles = 256

// FitConnections returns the connection cap to serve with under the
// process's open-file limit, ReservedFiles kept aside. A configured cap
// (http.max_connections) that does not fit is refused, naming both
// numbers; the default is lowered to fit instead, and lowered says so.
// Where the limit cannot be read, the cap stands as given.
func FitConnections(configured int) (max int, lowered bool, err error) {
	max = configured
	if max <= 0 {
		max = DefaultMaxConnections
	}
	limit := openFileLimit()
	if limit == 0 || uint64(max)+ReservedFiles <= limit {
		return max, false, nil
	}
	room := 0
	if limit > ReservedFiles {
		room = int(limit - ReservedFiles)
	}
	if configured > 0 || room < 1 {
		return 0, false, fmt.Errorf("http.max_connections: %d connections do not fit under this process's open-file limit (%d, of which %d are kept for the broker and the store); lower http.max_connections to %d or less, or raise the limit (ulimit -n)",
			max, limit, ReservedFiles, room)
	}
	return room, true, nil
}
