package peerbench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Profiler is a target whose server processes answer Go's CPU profile
// over HTTP (net/http/pprof's /debug/pprof/profile): Crewlet nodes
// started with `crewlet serve --pprof`, and rqlite, which serves it on
// its HTTP API. With Config.Profiles set, the first round's measurement
// of each workload is profiled on every server, so a figure comes with
// where its CPU went (`go tool pprof -top FILE`).
type Profiler interface {
	// ProfileRequests are the requests asking each server for a CPU
	// profile of the next seconds, in server order.
	ProfileRequests(ctx context.Context, seconds int) ([]*http.Request, error)
}

// measurementProfiles starts, where c asks for profiles, t answers them
// and this is the first round, the CPU profiles of the measurement of w
// on t. measured, set for writes, starts the profiles of what they leave
// behind once the measurement ends; profiled waits for every profile and
// says where each went.
func measurementProfiles(ctx context.Context, c Config, t Target, w Workload, round int) (measured, profiled func()) {
	p, ok := t.(Profiler)
	if !ok || c.Profiles == "" || round > 0 {
		return nil, func() {}
	}
	prs := []*profiling{startProfiles(ctx, p, t.Name(), w, "", c.PerRound, c.Profiles)}
	if w.Kind.writes() {
		measured = func() {
			// A server takes one CPU profile at a time, and the
			// measurement's outlasts a round shorter than its second.
			prs[0].wg.Wait()
			prs = append(prs, startProfiles(ctx, p, t.Name(), w, AfterSuffix, 2*c.PerRound, c.Profiles))
		}
	}
	return measured, func() {
		for _, pr := range prs {
			pr.wait(c.Progress)
		}
	}
}

// profileRequests are GETs of each base URL's CPU profile of the next
// seconds, with the headers given.
func profileRequests(ctx context.Context, bases []string, seconds int, header http.Header) ([]*http.Request, error) {
	var reqs []*http.Request
	for _, base := range bases {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(base, "/"), seconds), nil)
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		reqs = append(reqs, req)
	}
	return reqs, nil
}

// AfterSuffix names the profiles of what a measurement of writes left
// behind: taken from the measurement's end for twice its length, over
// the drain (costs.go), so the work a burst of writes leaves to the
// node's duties is profiled too.
const AfterSuffix = "-after"

// profiling is the profiles of one measurement, being taken.
type profiling struct {
	wg    sync.WaitGroup
	files []string
	errs  []error
}

// startProfiles asks every server of p for a CPU profile of the next d
// (whole seconds, at least one) and writes each answer to dir as
// <target>-<kind>-c<N>-<server><suffix>.pprof once it arrives.
func startProfiles(ctx context.Context, p Profiler, target string, w Workload, suffix string, d time.Duration, dir string) *profiling {
	pr := &profiling{}
	seconds := max(1, int(d/time.Second))
	reqs, err := p.ProfileRequests(ctx, seconds)
	if err != nil {
		pr.errs = append(pr.errs, err)
		return pr
	}
	pr.files = make([]string, len(reqs))
	pr.errs = make([]error, len(reqs))
	for i, req := range reqs {
		pr.files[i] = filepath.Join(dir, fmt.Sprintf("%s-%s-c%d-%d%s.pprof", target, w.Kind, w.Concurrency, i+1, suffix))
		pr.wg.Add(1)
		go func() {
			defer pr.wg.Done()
			pr.errs[i] = fetchProfile(req, pr.files[i])
		}()
	}
	return pr
}

// fetchProfile writes the answer of req to path; an answer other than
// 200 is an error saying what the server said.
func fetchProfile(req *http.Request, path string) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s answered %d: %s", req.URL.Redacted(), resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// wait waits for the profiles and says, on out, where each went or why
// it did not: a profile that failed costs its figure nothing.
func (pr *profiling) wait(out io.Writer) {
	pr.wg.Wait()
	if out == nil {
		return
	}
	for i, err := range pr.errs {
		switch {
		case err != nil:
			fmt.Fprintf(out, "profile: %v\n", err)
		case i < len(pr.files):
			fmt.Fprintf(out, "profile: %s\n", pr.files[i])
		}
	}
}
