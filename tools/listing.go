package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// ListPage is how many resources one resources/list answer holds at most
// (a toolset's stretch may end it early).
const ListPage = 100

// Listing is how a toolset lists its resources: its heads first, all at
// once, beside every other toolset's heads (projects, spaces), then the
// rest a stretch at a time (work items, then pages), toolset after
// toolset.
type Listing struct {
	// Heads are the resources listed on the first page; nil: none.
	Heads func(ctx context.Context, d Deps) ([]mcp.Resource, error)
	// Next appends the stretch at c (zero: the first) and returns where
	// the next one starts; done says there is none. nil: no stretch.
	Next func(ctx context.Context, d Deps, c ListCursor, out []mcp.Resource) (_ []mcp.Resource, next ListCursor, done bool, _ error)
}

// ListCursor is where a toolset's listing goes on: a group it lists in
// turn (a space whose pages are next) and the service's own cursor in it.
type ListCursor struct {
	Group  string `json:"s,omitempty"`
	Cursor string `json:"c,omitempty"`
}

// listCursor is where a resources/list continues: the stage (0 the
// heads, then 1, 2, ... each listing toolset's stretches in turn) and
// that toolset's cursor.
type listCursor struct {
	Kind int `json:"k"`
	ListCursor
}

// ListResources is one page of resources/list: every toolset's heads,
// then each toolset's stretches in turn, each page read at the surface's
// level. next is "" after the last page. The cursor is base64 (mcp-go
// checks that much before the listing is filled in).
func (c Catalogue) ListResources(ctx context.Context, d Deps, cursor string) (out []mcp.Resource, next string, err error) {
	var lc listCursor
	if cursor != "" {
		raw, err := base64.StdEncoding.DecodeString(cursor)
		if err != nil || json.Unmarshal(raw, &lc) != nil {
			return nil, "", engine.Refuse(engine.CodeInvalidArgument, "the cursor is not one resources/list gave; send its nextCursor as it came, or none for the first page.")
		}
	}
	for len(out) < ListPage {
		var done bool
		out, done, err = c.listStage(ctx, d, &lc, out)
		if err != nil {
			return nil, "", err
		}
		if done {
			return out, "", nil
		}
	}
	b, _ := json.Marshal(lc)
	return out, base64.StdEncoding.EncodeToString(b), nil
}

// listers are the toolsets with stretches to list, in order: stage i+1
// is listers[i]'s.
func (c Catalogue) listers() []Toolset {
	var out []Toolset
	for _, ts := range c {
		if ts.Listing != nil && ts.Listing.Next != nil {
			out = append(out, ts)
		}
	}
	return out
}

// listStage appends the next stretch of the cursor's stage and moves the
// cursor on; done says there is nothing after it.
func (c Catalogue) listStage(ctx context.Context, d Deps, lc *listCursor, out []mcp.Resource) (_ []mcp.Resource, done bool, _ error) {
	listers := c.listers()
	if lc.Kind == 0 {
		for _, ts := range c.served(d) {
			if ts.Listing == nil || ts.Listing.Heads == nil {
				continue
			}
			heads, err := ts.Listing.Heads(ctx, d)
			if err != nil {
				return nil, false, err
			}
			out = append(out, heads...)
		}
		*lc = listCursor{Kind: 1}
		return out, len(listers) == 0, nil
	}
	i := lc.Kind - 1
	if i >= len(listers) {
		return out, true, nil
	}
	last := i == len(listers)-1
	if !d.Filter.Keeps(listers[i].Name, true) {
		*lc = listCursor{Kind: lc.Kind + 1}
		return out, last, nil
	}
	out, next, stop, err := listers[i].Listing.Next(ctx, d, lc.ListCursor, out)
	if err != nil {
		return nil, false, err
	}
	if !stop {
		lc.ListCursor = next
		return out, false, nil
	}
	*lc = listCursor{Kind: lc.Kind + 1}
	return out, last, nil
}
