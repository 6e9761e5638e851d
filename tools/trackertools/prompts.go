package trackertools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// Prompt names.
const (
	PromptTriage         = "triage_new_items"
	PromptStatusReport   = "status_report"
	PromptFindDuplicates = "find_duplicates"
)

// promptItems bounds how many items a prompt quotes.
const promptItems = tracker.MaxListLimit

// prompts are the tracker's prompts, offered where the tracker's reads
// are: each reads what it is about at the surface's level and hands the
// model that, with what to do and the tools to do it with. Under
// --read-only they ask for proposals instead of writes.
func (d env) prompts() []server.ServerPrompt {
	project := mcp.WithArgument("project", mcp.RequiredArgument(), mcp.ArgumentDescription("Project key, like ENG."))
	return []server.ServerPrompt{
		{Prompt: mcp.NewPrompt(PromptTriage, mcp.WithPromptTitle("Triage new items"),
			mcp.WithPromptDescription("Triage a project's open, unassigned items: set status, assignee and tags, link or merge duplicates."),
			project), Handler: d.triagePrompt},
		{Prompt: mcp.NewPrompt(PromptStatusReport, mcp.WithPromptTitle("Status report"),
			mcp.WithPromptDescription("Write a status report for a project from its items."),
			project), Handler: d.statusPrompt},
		{Prompt: mcp.NewPrompt(PromptFindDuplicates, mcp.WithPromptTitle("Find duplicates"),
			mcp.WithPromptDescription("Find the duplicates of a work item among the items of the tracker."),
			mcp.WithArgument("key", mcp.RequiredArgument(), mcp.ArgumentDescription("Key of the item to find duplicates of, like ENG-8."))),
			Handler: d.duplicatesPrompt},
	}
}

// projectItems reads a project's items (at most promptItems) at the
// surface's level.
func (d env) projectItems(ctx context.Context, project string, f tracker.ListFilter) (tracker.ItemList, error) {
	f.Project, f.Limit = project, promptItems
	return d.tracker().ListWorkItems(ctx, d.ReadOptions(ctx, engine.StreamTracker), f)
}

func (d env) triagePrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	project, err := tools.PromptArg(req, "project", checkProjectKey)
	if err != nil {
		return nil, err
	}
	items, err := d.projectItems(ctx, project, tracker.ListFilter{Status: tracker.StatusOpen})
	if err != nil {
		return nil, d.ResourceFailed(ctx, "prompt:"+PromptTriage, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Triage the new work items of project %s: the open items nobody is assigned to.\n\n", project)
	n := 0
	for _, it := range items.Items {
		if it.Assignee == "" {
			n++
			fmt.Fprintf(&b, "- %s (version %d): %s%s\n", it.Key, it.Version, it.Title, tagList(it.Tags))
		}
	}
	if n == 0 {
		b.WriteString("(none: every open item has an assignee)\n")
	}
	fmt.Fprintf(&b, "\n%s\n\nFor each item: read it (get_work_item), decide its status, assignee and tags, and look for an item it duplicates (similar_work_items with its key). ", readLine(items.ReadInfo, items.NextCursor != ""))
	b.WriteString(d.actLine("set them with update_work_item (if_match is the version above, or get_work_item's) and merge a duplicate into the older item with merge_work_items", "propose the changes as a list"))
	return tools.PromptResult("Triage of "+project, b.String()), nil
}

func (d env) statusPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	project, err := tools.PromptArg(req, "project", checkProjectKey)
	if err != nil {
		return nil, err
	}
	items, err := d.projectItems(ctx, project, tracker.ListFilter{})
	if err != nil {
		return nil, d.ResourceFailed(ctx, "prompt:"+PromptStatusReport, err)
	}
	byStatus := map[string][]tracker.WorkItem{}
	for _, it := range items.Items {
		byStatus[it.Status] = append(byStatus[it.Status], it)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Write a status report for project %s from its work items below: what is done, what is in progress, what is blocked and on what, and the risks. Keep it short; name items by key.\n\n", project)
	for _, st := range tracker.Statuses {
		fmt.Fprintf(&b, "%s (%d):\n", st, len(byStatus[st]))
		for _, it := range byStatus[st] {
			who := it.Assignee
			if who == "" {
				who = "unassigned"
			}
			fmt.Fprintf(&b, "- %s: %s [%s, updated %s]%s\n", it.Key, it.Title, who, it.UpdatedAt.Format("2006-01-02"), tagList(it.Tags))
		}
	}
	fmt.Fprintf(&b, "\n%s Read an item (get_work_item) for its comments and edges before saying why it is blocked.", readLine(items.ReadInfo, items.NextCursor != ""))
	return tools.PromptResult("Status report for "+project, b.String()), nil
}

func (d env) duplicatesPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	key, err := tools.PromptArg(req, "key", checkItemKey)
	if err != nil {
		return nil, err
	}
	item, err := d.tracker().GetWorkItem(ctx, d.ReadOptions(ctx, engine.StreamTracker), key)
	if err != nil {
		return nil, d.ResourceFailed(ctx, "prompt:"+PromptFindDuplicates, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Find the duplicates of work item %s: %q.\n\n%s\n\n", key, item.Item.Title, item.Item.Description)
	if err := d.duplicateCandidates(ctx, &b, key, item.Item.Title); err != nil {
		return nil, d.ResourceFailed(ctx, "prompt:"+PromptFindDuplicates, err)
	}
	fmt.Fprintf(&b, "\n%s Read each candidate (get_work_item) and judge whether it reports the same work. ", readLine(item.ReadInfo, false))
	b.WriteString(d.actLine("merge the true duplicates into the oldest of them with merge_work_items", "list the true duplicates and say which one to keep"))
	return tools.PromptResult("Duplicates of "+key, b.String()), nil
}

// duplicateCandidates writes the prompt's candidates: similar_work_items'
// (words and vectors fused, with each one's similarity and the coverage)
// where the service finds similar items, else the items sharing words
// with the title.
func (d env) duplicateCandidates(ctx context.Context, b *strings.Builder, key, title string) error {
	if f, ok := d.svc.(SimilarFinder); ok {
		res, err := f.SimilarWorkItems(ctx, d.ReadOptions(ctx, engine.StreamTracker), tracker.SimilarQuery{Key: key, Limit: 10})
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "Candidates most similar to it in words and meaning (similar_work_items, ranked %s):\n", res.Ranking)
		for _, h := range res.Hits {
			sim := ""
			if h.Similarity != nil {
				sim = fmt.Sprintf(", similarity %.2f", *h.Similarity)
			}
			fmt.Fprintf(b, "- %s [%s%s]: %s\n", h.Key, h.Status, sim, h.Title)
		}
		if len(res.Hits) == 0 {
			b.WriteString("(none found: search_work_items with other words of its description)\n")
		}
		if c := res.Coverage; c != nil && c.Embedded < c.Total {
			fmt.Fprintf(b, "(Only %d of %d items have vectors yet: the rest are found by their words alone; search_work_items with other words may find more.)\n", c.Embedded, c.Total)
		}
		return nil
	}
	cands, err := d.candidates(ctx, key, title)
	if err != nil {
		return err
	}
	b.WriteString("Candidates sharing words with its title (search_work_items), most shared first:\n")
	for _, h := range cands {
		fmt.Fprintf(b, "- %s [%s]: %s\n", h.Key, h.Status, h.Title)
	}
	if len(cands) == 0 {
		b.WriteString("(none found by its title's words: search with other words of its description)\n")
	}
	return nil
}

// actLine is what a prompt asks the model to do: act where this surface
// writes, propose where it is read-only.
func (d env) actLine(act, propose string) string {
	if d.Filter.ReadOnly || !d.Filter.Keeps(Name, false) {
		return "This server is read-only here: " + propose + "."
	}
	return "Then " + act + "."
}

// readLine says what the quoted items are: the read's level and position,
// and whether the list was cut.
func readLine(info engine.ReadInfo, cut bool) string {
	s := fmt.Sprintf("(Read at %s, seen through %s.)", info.Level, info.SeenThrough.Token())
	if cut {
		s += fmt.Sprintf(" Only the first %d items are quoted: list_work_items pages through the rest.", promptItems)
	}
	return s
}

func tagList(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	return " #" + strings.Join(slices.Clone(tags), " #")
}

// maxDupWords bounds how many of a title's words find_duplicates
// searches for, one search each.
const maxDupWords = 6

// candidates are the items other than key that share words with title,
// those sharing more first: search matches every word of a query, so
// each word is a search of its own.
func (d env) candidates(ctx context.Context, key, title string) ([]tracker.SearchHit, error) {
	shared := map[string]int{}
	var hits []tracker.SearchHit
	for i, w := range strings.FieldsFunc(title, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if i >= maxDupWords {
			break
		}
		if len([]rune(w)) < 3 {
			continue
		}
		res, err := d.tracker().SearchWorkItems(ctx, d.ReadOptions(ctx, engine.StreamTracker), w, "", 20)
		if err != nil {
			return nil, err
		}
		for _, h := range res.Hits {
			if h.Key == key {
				continue
			}
			if shared[h.Key] == 0 {
				hits = append(hits, h)
			}
			shared[h.Key]++
		}
	}
	slices.SortStableFunc(hits, func(a, b tracker.SearchHit) int { return shared[b.Key] - shared[a.Key] })
	return hits, nil
}
