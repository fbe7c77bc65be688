// Command quality measures retrieval quality on real text, for each topK ranking (vector,
// lexical, hybrid) next to an independent BM25 computed by the benchmark itself, and
// calibrates the default thresholds of the built-in embedder.
//
// The text is the English man pages this Debian system ships (sections 1, 5 and 8 by
// default). Each page is split into what its NAME line says ("gzip, gunzip, zcat \- compress
// or expand files") and the rest. A query is the NAME line's description with the page's own
// names removed ("compress or expand files"); what is relevant to it is that page's text, which
// never holds the NAME line. Two regimes:
//
//   - corpus: every page's body chunked as the service chunks documents (recall.ChunkText,
//     1,000 characters), all in one corpus memory; a query finds its page when one of the page's
//     chunks is among the ten best;
//   - conversations: each of 25 pages gives 4 consecutive sentences from a random place in its
//     body, the 100 shuffled into one conversation of 100 messages (a conversation that moves
//     between topics); each of the 25 pages' queries is asked in it, and finds its page when one
//     of its 4 sentences is among the ten best. The lexical statistics are the conversation's own.
//
// recall@10 is the share of queries that find their page in the ten best; MRR@10 the mean of
// 1/rank of the first of the page's entries (0 beyond ten). In the conversations the rankings
// run through the in-memory store's RankEntries, the reference the Postgres store agrees with
// (the conformance suite, internal/store/storetest); in the corpus, whose 70,000 chunks the
// in-memory store scans in seconds per ranking, the benchmark computes each chunk's two
// components once per query with the functions RankEntries uses (core.LexicalScorer over the
// corpus's statistics, the cosine, core.Fuse) and takes each ranking's best with the stores' tie
// rule. The query's vector comes from the built-in hash embedder and its terms from
// core.QueryTerms, as a recall builds them. BM25 is the benchmark's own (bm25.go: its own
// tokeniser and postings, k1 1.2, b 0.75).
//
// -calibrate chooses a default threshold per ranking: every message of every conversation is
// scored against each of the conversation's queries (a related pair when the message comes from
// the query's page, an unrelated one otherwise), and the threshold is the one with the best F1
// at telling related pairs from unrelated ones; its precision and recall are printed, with the
// same threshold's on the corpus (the 20 best chunks of each query: what a topK of 10 with its
// reject window of 10 sees), and the score of the unrelated query "zxq unrelated words".
//
//	go run ./bench/quality [-sections 1,5,8] [-queries 1000] [-convs 40] [-corpus=false] [-alphas 0.1,0.2,0.4] [-calibrate] [-seed 1]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/footprint/footprint/bench/internal/debtext"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/turns"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/store/memory"
)

const (
	tenant = "bench"
	dims   = 384
	topK   = 10
	// window is what a topK of 10 asks its store for: k + the default rejectWindow.
	window = 20
)

type config struct {
	sections  []int
	queries   int
	convs     int
	alphas    []float64
	calibrate bool
	corpus    bool
	seed      uint64
}

// A conversation: convPages pages, convSentences consecutive sentences of each.
const (
	convPages     = 25
	convSentences = 4
)

func main() {
	var c config
	var sections, alphas string
	flag.StringVar(&sections, "sections", "1,5,8", "man page sections to read")
	flag.IntVar(&c.queries, "queries", 1000, "corpus queries (one per page, pages drawn at random)")
	flag.IntVar(&c.convs, "convs", 40, "conversations of 25 pages × 4 sentences (25 queries each)")
	flag.BoolVar(&c.corpus, "corpus", true, "measure the corpus regime (about 7 minutes on 2 busy cores; -corpus=false for the conversations only)")
	flag.StringVar(&alphas, "alphas", "0.2,0.3,0.4,0.5,0.6", "hybrid alphas to measure besides the default")
	flag.BoolVar(&c.calibrate, "calibrate", false, "calibrate the default thresholds (related vs unrelated pairs)")
	flag.Uint64Var(&c.seed, "seed", 1, "seed for the choice of pages and the order of messages")
	flag.Parse()
	for _, s := range strings.Split(sections, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 8 {
			fmt.Fprintf(os.Stderr, "quality: -sections takes numbers 1..8, got %q\n", s)
			os.Exit(2)
		}
		c.sections = append(c.sections, n)
	}
	for _, s := range strings.Split(alphas, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		a, err := strconv.ParseFloat(s, 64)
		if err != nil || a < 0 || a > 1 {
			fmt.Fprintf(os.Stderr, "quality: -alphas takes numbers in [0, 1], got %q\n", s)
			os.Exit(2)
		}
		c.alphas = append(c.alphas, a)
	}
	if c.queries < 1 || c.convs < 1 {
		fmt.Fprintln(os.Stderr, "quality: -queries and -convs must be ≥ 1")
		os.Exit(2)
	}
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "quality:", err)
		os.Exit(1)
	}
}

// page is one man page as the benchmark uses it.
type page struct {
	id, query string
	body      string
}

// ranking is one way of ordering: a store ranking, or the BM25 reference.
type ranking struct {
	name  string
	r     core.Ranking
	alpha float64
}

func (r ranking) String() string {
	if r.r == core.RankHybrid {
		return fmt.Sprintf("hybrid α %.2f", r.alpha)
	}
	return string(r.r)
}

type bench struct {
	cfg   config
	hash  *embedder.Hash
	model string
	def   core.RankingDefaults
}

func run(ctx context.Context, cfg config) error {
	start := time.Now()
	hash, err := embedder.NewHash("hash", dims)
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, hash: hash, model: hash.Info().Model, def: hash.Info().Ranking}
	t := time.Now()
	var pages []page
	for _, p := range debtext.ManPages(cfg.sections, 300) {
		q := withoutNames(p.Description, p.Names)
		if len(tokens(q)) < 2 {
			continue // nothing left to ask once the page's names are gone
		}
		pages = append(pages, page{id: p.ID, query: q, body: p.Body})
	}
	if len(pages) < 100 {
		return fmt.Errorf("only %d man pages with a NAME line on this system (sections %v): install more (apt-get install manpages manpages-dev)", len(pages), cfg.sections)
	}
	fmt.Printf("retrieval quality: %d man pages (sections %v) with a description left once their names are removed, read in %s; %d CPUs\n",
		len(pages), cfg.sections, since(t), runtime.NumCPU())
	fmt.Printf("built-in embedder %s (%d dims); its defaults: ranking %s, alpha %.2f, thresholds %v\n\n", b.model, dims, b.def.Ranking, b.def.Alpha, b.def.Thresholds)

	rankings := []ranking{{r: core.RankVector}, {r: core.RankLexical}, {name: "default", r: core.RankHybrid, alpha: b.def.Alpha}}
	if b.def.Ranking != core.RankHybrid {
		rankings[2].name = ""
	}
	for _, a := range cfg.alphas {
		if a != b.def.Alpha {
			rankings = append(rankings, ranking{r: core.RankHybrid, alpha: a})
		}
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 0x9a11))
	corpus := result{name: "corpus"}
	if cfg.corpus {
		if corpus, err = b.corpus(ctx, pages, rng, rankings); err != nil {
			return err
		}
	}
	convs, err := b.conversations(ctx, pages, rng, rankings)
	if err != nil {
		return err
	}
	fmt.Println("summary (targets from issue 26):")
	misses := 0
	for _, res := range []result{corpus, convs} {
		if res.metrics == nil {
			continue
		}
		def := res.metrics[b.defaultName()]
		bm := res.metrics["bm25"]
		best := max(res.metrics["vector"].recall(), res.metrics["lexical"].recall())
		checks := []struct {
			name string
			ok   bool
			got  string
		}{
			{res.name + ": default ranking recall@10 ≥ BM25 reference", def.recall() >= bm.recall(), fmt.Sprintf("%.3f vs %.3f", def.recall(), bm.recall())},
			{res.name + ": hybrid recall@10 ≥ the better of vector and lexical", def.recall() >= best, fmt.Sprintf("%.3f vs %.3f", def.recall(), best)},
		}
		for _, c := range checks {
			verdict := "PASS"
			if !c.ok {
				verdict, misses = "MISS", misses+1
			}
			fmt.Printf("  %s  %-70s %s\n", verdict, c.name, c.got)
		}
	}
	if cfg.calibrate {
		if err := b.calibrate(ctx, corpus, convs); err != nil {
			return err
		}
	}
	fmt.Printf("%d misses; whole run %s\n", misses, since(start))
	return nil
}

// defaultName is the built-in embedder's default ranking as the tables name it.
func (b *bench) defaultName() string { return ranking{r: b.def.Ranking, alpha: b.def.Alpha}.String() }

// withoutNames removes from a NAME line's description every word that is one of the page's
// names (or made only of their terms): "gzip \- compress files with gzip" asks "compress files
// with".
func withoutNames(desc string, names []string) string {
	// The benchmark's own tokeniser (bm25.go), not the service's: which queries exist must not
	// depend on what is measured.
	drop := map[string]bool{}
	for _, n := range names {
		for _, t := range tokens(n) {
			drop[t] = true
		}
	}
	var keep []string
	for _, w := range strings.Fields(desc) {
		terms := tokens(w)
		named := len(terms) > 0
		for _, t := range terms {
			named = named && drop[t]
		}
		if !named {
			keep = append(keep, w)
		}
	}
	return strings.Join(keep, " ")
}

// metric accumulates recall@10 and MRR@10.
type metric struct {
	n, hits int
	rr      float64
}

func (m *metric) add(ranked []string, relevant func(string) bool) {
	m.n++
	for i, id := range ranked[:min(len(ranked), topK)] {
		if relevant(id) {
			m.hits++
			m.rr += 1 / float64(i+1)
			return
		}
	}
}

func (m metric) recall() float64 { return float64(m.hits) / float64(max(m.n, 1)) }
func (m metric) mrr() float64    { return m.rr / float64(max(m.n, 1)) }

// result is one regime's measurements, and what calibration needs of it.
type result struct {
	name    string
	metrics map[string]metric
	// pairs holds, per ranking name, the scored (query, entry) pairs for calibration.
	pairs map[core.Ranking][]pair
	// unrelated is the best score of "zxq unrelated words" per ranking, over the regime's
	// collections.
	unrelated map[core.Ranking]float64
}

type pair struct {
	score   float64
	related bool
}

func (b *bench) rankQuery(ns, mem string, kind core.EntryKind, r ranking, text string, vec []float32, limit int) recall.RankQuery {
	return recall.RankQuery{Tenant: tenant, Namespace: ns, MemoryID: mem, Kinds: []core.EntryKind{kind}, Vector: vec, Model: b.model,
		Ranking: r.r, Alpha: r.alpha, Terms: core.QueryTerms(text), Limit: limit, Now: time.Now().UTC()}
}

func (b *bench) embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += 512 {
		vs, err := b.hash.Embed(ctx, texts[i:min(i+512, len(texts))])
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

// report prints one regime's table.
func report(res result, rankings []ranking, defName string) {
	fmt.Printf("%-22s %10s %8s %6s\n", "ranking", "recall@10", "MRR@10", "n")
	names := []string{"bm25"}
	for _, r := range rankings {
		names = append(names, r.String())
	}
	for _, name := range names {
		m := res.metrics[name]
		label := name
		switch name {
		case "bm25":
			label = "BM25 reference"
		case defName:
			label += " (default)"
		}
		fmt.Printf("%-22s %10.3f %8.3f %6d\n", label, m.recall(), m.mrr(), m.n)
	}
	fmt.Println()
}

// corpus is regime 1: every page's chunks in one corpus memory.
func (b *bench) corpus(ctx context.Context, pages []page, rng *rand.Rand, rankings []ranking) (result, error) {
	t := time.Now()
	store := memory.New()
	var chunks []core.Entry
	var texts, ids []string
	owner := map[string]string{}
	now := time.Now().UTC()
	for _, p := range pages {
		for n, text := range recall.ChunkText(p.body, 1000) {
			if !core.HasWords(text) {
				continue
			}
			id := fmt.Sprintf("%s#%d", p.id, n)
			value, _ := json.Marshal(map[string]any{"text": text, "docId": p.id})
			chunks = append(chunks, core.Entry{Tenant: tenant, MemoryID: "docs", Namespace: core.CorpusNamespace, ID: id,
				Kind: core.KindDocument, Index: n, Value: value, CreatedAt: now, UpdatedAt: now, LastAccessedAt: now,
				Lexical: core.LexicalOf(text)})
			texts, ids = append(texts, text), append(ids, id)
			owner[id] = p.id
		}
	}
	vecs, err := b.embed(ctx, texts)
	if err != nil {
		return result{}, err
	}
	for i := range chunks {
		chunks[i].Embedding, chunks[i].EmbeddingModel = vecs[i], b.model
	}
	if err := store.PutDocuments(ctx, tenant, "docs", nil, chunks, nil); err != nil {
		return result{}, err
	}
	// The corpus's statistics, as the stores keep them: chunks with terms, their length, and
	// per term the chunks holding it.
	df := map[string]int{}
	var length int64
	for _, e := range chunks {
		if e.Lexical != nil {
			length += int64(e.Lexical.Length)
			for _, term := range e.Lexical.Terms {
				df[term]++
			}
		}
	}
	ref := newBM25(ids, texts)
	qs := slices.Clone(pages)
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	qs = qs[:min(len(qs), b.cfg.queries)]
	qvecs, err := b.embed(ctx, func() []string {
		var out []string
		for _, p := range qs {
			out = append(out, p.query)
		}
		return out
	}())
	if err != nil {
		return result{}, err
	}
	fmt.Printf("== corpus: %d chunks of %d pages in one corpus memory; %d queries (loaded in %s)\n", len(chunks), len(pages), len(qs), since(t))
	res := result{name: "corpus", metrics: map[string]metric{}, pairs: map[core.Ranking][]pair{}, unrelated: map[core.Ranking]float64{}}
	vscore := make([]float64, len(chunks))
	lscore := make([]float64, len(chunks))
	for i, p := range qs {
		if i > 0 && i%100 == 0 {
			fmt.Fprintf(os.Stderr, "  corpus: %d/%d queries, %s\n", i, len(qs), since(t))
		}
		rel := func(id string) bool { return owner[id] == p.id }
		m := res.metrics["bm25"]
		m.add(ref.search(p.query, topK), rel)
		res.metrics["bm25"] = m
		// Both components of every chunk once (what RankEntries computes, with the same core
		// functions: a 70k-chunk scan per ranking through the in-memory store takes seconds),
		// then each ranking's best, equal scores newest first as the stores order them.
		terms := core.QueryTerms(p.query)
		st := core.TermStats{Docs: len(chunks), Length: length, DF: make([]int, len(terms))}
		for k, term := range terms {
			st.DF[k] = df[term]
		}
		scorer := core.NewLexicalScorer(terms, st)
		for j := range chunks {
			vscore[j] = cosine(qvecs[i], chunks[j].Embedding)
			lscore[j] = scorer.Score(chunks[j].Lexical)
		}
		for _, r := range rankings {
			best := topOf(chunks, window, func(j int) float64 { return core.Fuse(r.r, r.alpha, vscore[j], lscore[j]) })
			var got []string
			for _, j := range best {
				got = append(got, chunks[j].ID)
			}
			m := res.metrics[r.String()]
			m.add(got, rel)
			res.metrics[r.String()] = m
			if r.name == "default" || r.r != core.RankHybrid {
				for _, j := range best {
					res.pairs[r.r] = append(res.pairs[r.r], pair{core.Fuse(r.r, r.alpha, vscore[j], lscore[j]), rel(chunks[j].ID)})
				}
			}
		}
	}
	if err := b.unrelated(ctx, store, core.CorpusNamespace, "docs", core.KindDocument, &res); err != nil {
		return result{}, err
	}
	report(res, rankings, b.defaultName())
	return res, nil
}

// unrelated records the best score of an unrelated query under each ranking.
func (b *bench) unrelated(ctx context.Context, store *memory.Store, ns, mem string, kind core.EntryKind, res *result) error {
	const text = "zxq unrelated words"
	vs, err := b.hash.Embed(ctx, []string{text})
	if err != nil {
		return err
	}
	for _, r := range []core.Ranking{core.RankVector, core.RankLexical, core.RankHybrid} {
		rk, err := store.RankEntries(ctx, b.rankQuery(ns, mem, kind, ranking{r: r, alpha: b.def.Alpha}, text, vs[0], 1))
		if err != nil {
			return err
		}
		if len(rk.Ranked) > 0 {
			if cur, ok := res.unrelated[r]; !ok || rk.Ranked[0].Score > cur {
				res.unrelated[r] = rk.Ranked[0].Score
			}
		}
	}
	return nil
}

// conversations is regime 2.
func (b *bench) conversations(ctx context.Context, pages []page, rng *rand.Rand, rankings []ranking) (result, error) {
	t := time.Now()
	var usable []page
	for _, p := range pages {
		if len(debtext.Sentences(p.body)) >= convSentences {
			usable = append(usable, p)
		}
	}
	rng.Shuffle(len(usable), func(i, j int) { usable[i], usable[j] = usable[j], usable[i] })
	n := min(b.cfg.convs, len(usable)/convPages)
	store := memory.New()
	res := result{name: "conversations", metrics: map[string]metric{}, pairs: map[core.Ranking][]pair{}, unrelated: map[core.Ranking]float64{}}
	fps := []core.Fingerprint{{MemoryID: "conv", Model: b.model, Dims: dims}}
	for c := range n {
		group := usable[c*convPages : (c+1)*convPages]
		type msg struct{ text, page string }
		var msgs []msg
		for _, p := range group {
			ss := debtext.Sentences(p.body)
			at := rng.IntN(len(ss) - convSentences + 1)
			for _, s := range ss[at : at+convSentences] {
				msgs = append(msgs, msg{s, p.id})
			}
		}
		rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
		texts := make([]string, len(msgs))
		for i, m := range msgs {
			texts[i] = m.text
		}
		vecs, err := b.embed(ctx, texts)
		if err != nil {
			return result{}, err
		}
		ns := core.Identity{Tenant: tenant, ConversationID: fmt.Sprintf("conv-%d", c)}.Namespace()
		now := time.Now().UTC()
		owner := map[string]string{}
		var entries []core.Entry
		for i, m := range msgs {
			turn, idx := i/2+1, i%2
			id := fmt.Sprintf("msg-%d-%d", turn, idx)
			owner[id] = m.page
			value, _ := json.Marshal(core.Message{Role: []string{"user", "assistant"}[idx], Content: m.text})
			entries = append(entries, core.Entry{Tenant: tenant, MemoryID: "conv", Namespace: ns, ID: id, Kind: core.KindMessage,
				Turn: turn, Index: idx, Value: value, Version: 1, CreatedAt: now, UpdatedAt: now, LastAccessedAt: now, SourceTurn: turn,
				Embedding: vecs[i], EmbeddingModel: b.model, Lexical: core.LexicalOf(m.text)})
		}
		if _, err := store.WriteTurn(ctx, turns.TurnWrite{Tenant: tenant, Namespace: ns, Now: now,
			Scope: turns.TurnScope{MemoryIDs: []string{"conv"}, Kinds: turns.CountedKinds(true, false)}, FingerprintMemories: []string{"conv"},
			Decide: turns.Decider(1, fps, func(int) ([]core.Entry, error) { return entries, nil })}); err != nil {
			return result{}, err
		}
		var ids []string
		for i := range msgs {
			ids = append(ids, entries[i].ID)
		}
		ref := newBM25(ids, texts)
		for _, p := range group {
			rel := func(id string) bool { return owner[id] == p.id }
			qv, err := b.hash.Embed(ctx, []string{p.query})
			if err != nil {
				return result{}, err
			}
			m := res.metrics["bm25"]
			m.add(ref.search(p.query, topK), rel)
			res.metrics["bm25"] = m
			for _, r := range rankings {
				limit := window
				if r.name == "default" || r.r != core.RankHybrid {
					limit = len(msgs) // every message scored: the calibration's pairs
				}
				rk, err := store.RankEntries(ctx, b.rankQuery(ns, "conv", core.KindMessage, r, p.query, qv[0], limit))
				if err != nil {
					return result{}, err
				}
				var got []string
				for _, sc := range rk.Ranked {
					got = append(got, sc.Entry.ID)
				}
				m := res.metrics[r.String()]
				m.add(got, rel)
				res.metrics[r.String()] = m
				if limit == len(msgs) {
					for _, sc := range rk.Ranked {
						res.pairs[r.r] = append(res.pairs[r.r], pair{sc.Score, rel(sc.Entry.ID)})
					}
				}
			}
		}
		if err := b.unrelated(ctx, store, ns, "conv", core.KindMessage, &res); err != nil {
			return result{}, err
		}
	}
	fmt.Printf("== conversations: %d conversations of %d messages (%d consecutive sentences of each of %d pages, shuffled); %d queries (in %s)\n",
		n, convPages*convSentences, convSentences, convPages, n*convPages, since(t))
	report(res, rankings, b.defaultName())
	return res, nil
}

// calibrate picks, per ranking, the threshold with the best F1 on the conversations' pairs.
func (b *bench) calibrate(_ context.Context, corpus, convs result) error {
	fmt.Println("\ndefault thresholds (calibration): the threshold with the best F1 at telling related (query, message) pairs")
	fmt.Println("from unrelated ones over every message of every conversation; the corpus column is the same threshold on each")
	fmt.Println("query's 20 best chunks; \"zxq\" is the best score of \"zxq unrelated words\" in any conversation and in the corpus")
	fmt.Printf("%-8s %9s %22s %22s %10s %10s %8s\n", "ranking", "threshold", "conversations P / R", "corpus P / R", "zxq convs", "zxq corpus", "current")
	for _, r := range []core.Ranking{core.RankVector, core.RankLexical, core.RankHybrid} {
		t, p, rc := best(convs.pairs[r])
		cp, cr := at(corpus.pairs[r], t)
		cur := "none"
		if v, ok := b.def.Thresholds[r]; ok {
			cur = fmt.Sprintf("%.2f", v)
		}
		fmt.Printf("%-8s %9.2f %14.3f / %.3f %14.3f / %.3f %10.3f %10.3f %8s\n", r, t, p, rc, cp, cr, convs.unrelated[r], corpus.unrelated[r], cur)
	}
	if len(convs.pairs[core.RankHybrid]) > 0 {
		fmt.Println("\nprecision / recall of the conversations' pairs by threshold:")
		fmt.Printf("%9s", "threshold")
		for _, r := range []core.Ranking{core.RankVector, core.RankLexical, core.RankHybrid} {
			fmt.Printf(" %17s", r)
		}
		fmt.Println()
		for t := 0.0; t <= 0.601; t += 0.05 {
			fmt.Printf("%9.2f", t)
			for _, r := range []core.Ranking{core.RankVector, core.RankLexical, core.RankHybrid} {
				p, rc := at(convs.pairs[r], t)
				fmt.Printf("     %.3f / %.3f", p, rc)
			}
			fmt.Println()
		}
	}
	fmt.Println()
	return nil
}

// at is the precision and recall of "score > t means related" over pairs.
func at(pairs []pair, t float64) (float64, float64) {
	tp, fp, fn := 0, 0, 0
	for _, p := range pairs {
		switch {
		case p.score > t && p.related:
			tp++
		case p.score > t:
			fp++
		case p.related:
			fn++
		}
	}
	return float64(tp) / float64(max(tp+fp, 1)), float64(tp) / float64(max(tp+fn, 1))
}

// best is the threshold (0.00 to 0.99, by 0.01) with the best F1 over pairs.
func best(pairs []pair) (t, p, r float64) {
	bestF := -1.0
	for i := range 100 {
		x := float64(i) / 100
		pp, rr := at(pairs, x)
		f := 0.0
		if pp+rr > 0 {
			f = 2 * pp * rr / (pp + rr)
		}
		if f > bestF {
			bestF, t, p, r = f, x, pp, rr
		}
	}
	return t, p, r
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// cosine is the cosine similarity of two unit vectors (the built-in embedder's are).
func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot
}

// topOf returns the indices of the k best entries by score, best first, equal scores newest
// first (core.CompareNewest), as a store's ranking returns them.
func topOf(entries []core.Entry, k int, score func(int) float64) []int {
	type hit struct {
		i int
		s float64
	}
	better := func(a, b hit) bool {
		if a.s != b.s {
			return a.s > b.s
		}
		return core.CompareNewest(entries[a.i], entries[b.i]) < 0
	}
	top := make([]hit, 0, k+1)
	for i := range entries {
		h := hit{i, score(i)}
		if len(top) == k && !better(h, top[k-1]) {
			continue
		}
		top = append(top, h)
		for j := len(top) - 1; j > 0 && better(top[j], top[j-1]); j-- {
			top[j], top[j-1] = top[j-1], top[j]
		}
		if len(top) > k {
			top = top[:k]
		}
	}
	out := make([]int, len(top))
	for i, h := range top {
		out[i] = h.i
	}
	return out
}
