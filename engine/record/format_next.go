//go:build crewlet_nextformat

package record

// FormatVersion, in a build made with -tags crewlet_nextformat, is one
// past the release's: such a build plays the next release in the
// rolling-upgrade tests (cmd/crewlet's two-build fleet), writing records
// the current build cannot read. Never shipped.
const FormatVersion = 4
