package snapshot

import (
	"context"
	"io"
	"log/slog"
	"time"
)

// EvAdoptProgress is the line an adopting node writes while it downloads
// its donor's artefact (component statelog): the bytes so far, the
// artefact's size and the percent, every AdoptConfig.ProgressEvery, and
// once more at 100 % when it wrote one before. A snapshot is the whole
// database; on a large one the download is the long part of an adoption,
// and without this line the node says nothing between
// statelog_below_the_floor and statelog_adopted.
const EvAdoptProgress = "statelog_adopt_progress"

// DefaultProgressEvery is how often an adoption's download logs its
// progress by default: the replay's interval (statelog.ProgressEvery).
const DefaultProgressEvery = 10 * time.Second

// ProgressFetcher is a Repository that can tell a download's progress:
// both of this package's repositories are. Adopt uses it where the
// repository has it and Fetch otherwise.
type ProgressFetcher interface {
	// FetchProgress is Fetch, telling progress (nil: nobody) the bytes
	// written to dst so far and the artefact's size (Manifest.Size).
	FetchProgress(ctx context.Context, m Manifest, dst string, progress Progress) error
}

// counting passes writes on to w and tells progress the running total.
type counting struct {
	w        io.Writer
	done     int64
	total    int64
	progress Progress
}

func (c *counting) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.done += int64(n)
	if c.progress != nil && n > 0 {
		c.progress(c.done, c.total)
	}
	return n, err
}

// adoptProgress is the Progress of one download from donor: it logs
// EvAdoptProgress at most once per every, and a last line when the bytes
// are all there if it logged any before (a short download says nothing
// but statelog_adopted).
func adoptProgress(log *slog.Logger, m Manifest, every time.Duration) Progress {
	if every <= 0 {
		every = DefaultProgressEvery
	}
	start := time.Now()
	said := start
	logged := false
	return func(done, total int64) {
		now := time.Now()
		last := done >= total
		if !(now.Sub(said) >= every || last && logged) {
			return
		}
		said, logged = now, true
		attrs := []any{"donor", m.Donor, "name", m.Name, "bytes_done", done, "bytes_total", total,
			"percent", percentOf(done, total)}
		if secs := now.Sub(start).Seconds(); secs > 0 {
			attrs = append(attrs, "bytes_per_second", float64(done)/secs)
		}
		log.Info(EvAdoptProgress, attrs...)
	}
}

// percentOf is done as a whole percent of total (100 for an empty total).
func percentOf(done, total int64) int64 {
	if total <= 0 {
		return 100
	}
	return min(done*100/total, 100)
}
