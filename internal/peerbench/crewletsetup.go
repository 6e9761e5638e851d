package peerbench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
)

// Setup files, through the same tools a user calls, what the plan's
// workloads read and write: the toy project and its first item, the
// projects the same-job writes go to, an item per update worker, an item
// per get worker with its tags, watchers and fields, and the search
// corpus where the plan searches or bulk-updates. Rows an earlier run
// against the same node filed are kept.
func (c *Crewlet) Setup(ctx context.Context, p Plan) error {
	c.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	c.clients = map[int]*client.Client{}
	c.plan = p
	if _, err := c.client(ctx, 0); err != nil {
		return err
	}
	for _, pr := range []string{c.project(), "CR", "UP", "GT"} {
		if err := c.newProject(ctx, pr); err != nil {
			return err
		}
	}
	if err := c.ensure(ctx, c.project()+"-1", func() error {
		_, err := c.write(ctx, 0, "create_work_item", map[string]any{"project": c.project(), "title": "the row the reads read"})
		return err
	}); err != nil {
		return err
	}
	if err := c.ensure(ctx, fmt.Sprintf("UP-%d", Workers), func() error { return c.fill(ctx, 0, "UP", 0, Workers) }); err != nil {
		return err
	}
	if err := c.ensure(ctx, fmt.Sprintf("GT-%d", Workers), c.dressGets(ctx)); err != nil {
		return err
	}
	if err := c.readVersions(ctx); err != nil {
		return err
	}
	if p.filesCorpus() {
		if err := c.fillCorpus(ctx, p); err != nil {
			return err
		}
	}
	return c.settleEverywhere(ctx, p)
}

// newProject creates a project, which an earlier run may have.
func (c *Crewlet) newProject(ctx context.Context, key string) error {
	_, err := c.write(ctx, 0, "create_project", map[string]any{"key": key, "name": key})
	if err != nil && strings.Contains(err.Error(), "already_exists") {
		return nil
	}
	return err
}

// ensure runs file unless the item key is there already.
func (c *Crewlet) ensure(ctx context.Context, key string, file func() error) error {
	_, err := c.get(ctx, 0, "/api/v1/work-items/"+key+"?read_level=linearizable")
	var se *statusError
	if errors.As(err, &se) && se.code == http.StatusNotFound {
		return file()
	}
	return err
}

// fill files n items of the corpus from first on into project, a
// hundred to a bulk_create_work_items call (its most).
func (c *Crewlet) fill(ctx context.Context, worker int, project string, first, n int) error {
	var items []any
	for j := 0; j < n; j++ {
		title, desc := corpusText(first + j)
		items = append(items, map[string]any{"title": title, "description": desc, "assignee": assignee(first + j)})
		if len(items) == 100 || j == n-1 {
			if _, err := c.write(ctx, worker, "bulk_create_work_items", map[string]any{"project": project, "items": items}); err != nil {
				return err
			}
			items = nil
		}
	}
	return nil
}

// dressGets files the get workers' items, each with two tags, two
// watchers and every field set.
func (c *Crewlet) dressGets(ctx context.Context) func() error {
	return func() error {
		for w := 0; w < Workers; w++ {
			title, desc := corpusText(w)
			ans, err := c.write(ctx, 0, "create_work_item", map[string]any{"project": "GT", "title": title, "description": desc,
				"tags": []string{"backend", "perf"}, "priority": "high", "due": "2026-03-31", "estimate": 3, "type": "bug"})
			if err != nil {
				return err
			}
			it, _ := ans["item"].(map[string]any)
			if _, err := c.write(ctx, 0, "update_work_item", map[string]any{"key": it["key"], "add_watchers": []string{"ann", "bob"}}); err != nil {
				return err
			}
		}
		return nil
	}
}

// readVersions reads each update worker's item's version.
func (c *Crewlet) readVersions(ctx context.Context) error {
	cl, err := c.client(ctx, 0)
	if err != nil {
		return err
	}
	for w := 0; w < Workers; w++ {
		ans, err := call(ctx, cl, "get_work_item", map[string]any{"key": fmt.Sprintf("UP-%d", w+1)})
		if err != nil {
			return err
		}
		if c.versions[w], err = itemVersion(ans); err != nil {
			return err
		}
	}
	return nil
}

// fillCorpus files the corpus, a project of BulkItems at a time, the
// projects side by side, each from a worker of its own. A project an
// interrupted run left part-filled is not completed: run the bench on a
// fresh node then.
func (c *Crewlet) fillCorpus(ctx context.Context, p Plan) error {
	var wg sync.WaitGroup
	errs := make([]error, p.corpusProjects())
	for j := range errs {
		pr := corpusProject(j)
		if err := c.newProject(ctx, pr); err != nil {
			return err
		}
		n := min(p.BulkItems, p.Corpus-j*p.BulkItems)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[j] = c.ensure(ctx, fmt.Sprintf("%s-%d", pr, n), func() error { return c.fill(ctx, j, pr, j*p.BulkItems, n) })
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// settleEverywhere waits until every node reads the last item the set-up
// filed, at linearizable, so the stale reads that follow find the rows
// whichever node they ask (worker i asks node i modulo the fleet's size).
func (c *Crewlet) settleEverywhere(ctx context.Context, p Plan) error {
	last := fmt.Sprintf("GT-%d", Workers)
	if p.filesCorpus() {
		last = fmt.Sprintf("%s-%d", corpusProject(p.corpusProjects()-1), p.Corpus-(p.corpusProjects()-1)*p.BulkItems)
	}
	for i := range c.BaseURLs {
		if err := untilSettled(ctx, func() error {
			_, err := c.get(ctx, i, "/api/v1/work-items/"+last+"?read_level=linearizable")
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}
