package node

import (
	"log/slog"

	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/semantic"
)

// The capabilities a domain's service may declare, which link wires
// without the node naming the domain: a service that embeds takes the
// node's embedder (embedder.*) and its logger; a semantic.Index (the
// vectors domain) is handed every semantic.Corpus to embed and is handed
// to every semantic.Searcher to rank with.
type (
	embedUser  interface{ UseEmbedder(embed.Embedder) }
	logUser    interface{ UseLogger(*slog.Logger) }
	corpusUser interface{ UseCorpus(semantic.Corpus) }
)

// link wires the domains' services to one another, once they are all
// built (openReplicas).
func (n *Node) link() error {
	emb, err := embed.New(n.cfg.Embedder)
	if err != nil {
		return err
	}
	var index semantic.Index
	for _, d := range n.domains {
		if u, ok := d.service.(embedUser); ok {
			u.UseEmbedder(emb)
		}
		if u, ok := d.service.(logUser); ok {
			u.UseLogger(n.cfg.Logger)
		}
		if ix, ok := d.service.(semantic.Index); ok && index == nil {
			index = ix
		}
	}
	if index == nil {
		return nil
	}
	for _, d := range n.domains {
		if s, ok := d.service.(semantic.Searcher); ok {
			s.UseIndex(index)
		}
		if c, ok := d.service.(semantic.Corpus); ok {
			if u, ok := index.(corpusUser); ok {
				u.UseCorpus(c)
			}
		}
	}
	return nil
}
