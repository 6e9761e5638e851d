package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
)

// AdoptConfig is what an adopting node brings: how it reaches its peers,
// the repository donations land in (the broker's object store), what each
// log still holds, and where its database is.
type AdoptConfig struct {
	Conn *nats.Conn
	Node string
	Repo Repository
	// Floors are the logs this node must follow, by domain: each log's
	// first sequence and creation instant. A donor's snapshot must cover
	// every one (Manifest.Covers).
	Floors map[string]Floor
	// DBPath is the database the snapshot replaces; it must be closed and
	// checkpointed (Checkpointed).
	DBPath string
	// Install puts the verified artefact at path in place of the rows
	// (nil: Install it over DBPath, which must then be closed). A node
	// already running, its replicas held, restores it into its open
	// database instead (RestoreInto).
	Install func(path string) error
	// Wait bounds how long the node keeps asking while no peer can donate.
	Wait time.Duration
	// Hook, when set, runs before a donor is asked; an error skips that
	// donor (a test seam).
	Hook func(donor string) error
	// OfferWindow is how long each round gathers offers (default 1 s).
	OfferWindow time.Duration
	// ProgressEvery is how often the download logs its progress
	// (EvAdoptProgress; default DefaultProgressEvery).
	ProgressEvery time.Duration
	Logger        *slog.Logger
}

// Adopt asks the fleet for a snapshot covering every floor, installs the
// first whose artefact verifies, and returns its manifest. A corrupt
// artefact is refused (statelog_snapshot_refused) and the next donor
// asked; a round with no donor is tried again until Wait has passed.
func Adopt(ctx context.Context, cfg AdoptConfig) (Manifest, error) {
	log := logger(cfg.Logger)
	window := cfg.OfferWindow
	if window == 0 {
		window = time.Second
	}
	deadline := time.Now().Add(cfg.Wait)
	var last error
	for {
		m, err := adoptRound(ctx, cfg, window, log)
		if err == nil {
			log.Info(EvAdopted, "donor", m.Donor, "sha256", m.SHA256, "taken_at", m.TakenAt, "name", m.Name, "size", m.Size, "domains", seqs(m))
			return m, nil
		}
		last = err
		if ctx.Err() != nil || time.Now().After(deadline) {
			return Manifest{}, fmt.Errorf("snapshot: no peer donated a snapshot covering what the logs still hold within %v: %w", cfg.Wait, last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// adoptRound gathers the offers once and tries each eligible donor, best
// first.
func adoptRound(ctx context.Context, cfg AdoptConfig, window time.Duration, log *slog.Logger) (Manifest, error) {
	offers, err := Offers(ctx, cfg.Conn, window)
	if err != nil {
		return Manifest{}, err
	}
	donors := eligible(offers, cfg.Node, cfg.Floors)
	if len(donors) == 0 {
		return Manifest{}, fmt.Errorf("%d peer(s) answered and none holds rows at or past every log's first sequence", len(offers))
	}
	var errs []error
	for _, donor := range donors {
		var m Manifest
		var err error
		if cfg.Hook != nil {
			err = cfg.Hook(donor)
		}
		if err == nil {
			m, err = Ask(ctx, cfg.Conn, donor, cfg.Node)
		}
		if err == nil {
			err = fetchInstall(ctx, cfg, m, log)
		}
		var ce *CorruptError
		if errors.As(err, &ce) {
			log.Warn(EvSnapshotRefused, "donor", donor, "sha256", ce.Want, "got", ce.Got, "name", ce.Name)
		}
		if err == nil {
			return m, nil
		}
		errs = append(errs, err)
	}
	return Manifest{}, errors.Join(errs...)
}

// fetchInstall fetches m's artefact beside the database, verifies it and
// installs it.
func fetchInstall(ctx context.Context, cfg AdoptConfig, m Manifest, log *slog.Logger) error {
	if !m.Covers(cfg.Floors) {
		return fmt.Errorf("snapshot %s from %s does not reach every log's first sequence", m.Name, m.Donor)
	}
	tmp := cfg.DBPath + ".adopting"
	var err error
	if pf, ok := cfg.Repo.(ProgressFetcher); ok {
		err = pf.FetchProgress(ctx, m, tmp, adoptProgress(log, m, cfg.ProgressEvery))
	} else {
		err = cfg.Repo.Fetch(ctx, m, tmp)
	}
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // gone already once renamed into place
	if cfg.Install != nil {
		return cfg.Install(tmp)
	}
	return Install(tmp, cfg.DBPath)
}

// eligible names the peers whose every checkpoint covers floors, the most
// advanced first (the fewest records left to replay).
func eligible(offers []Offer, self string, floors map[string]Floor) []string {
	type cand struct {
		node string
		sum  uint64
	}
	var cs []cand
	for _, o := range offers {
		if o.Node == self || !(Manifest{Domains: o.Domains}).Covers(floors) {
			continue
		}
		var sum uint64
		for _, p := range o.Domains {
			sum += p.Seq
		}
		cs = append(cs, cand{o.Node, sum})
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].sum != cs[j].sum {
			return cs[i].sum > cs[j].sum
		}
		return cs[i].node < cs[j].node
	})
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.node
	}
	return out
}

// seqs is a manifest's checkpoint per domain, for a log line.
func seqs(m Manifest) map[string]uint64 {
	out := map[string]uint64{}
	for d, p := range m.Domains {
		out[d] = p.Seq
	}
	return out
}
