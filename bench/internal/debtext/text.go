package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// document is one text that ships in a Debian package, cleaned to plain
// paragraphs separated by blank lines.
type document struct {
	id   string // safe for an entry id: [a-z0-9._-]
	uri  string // where it came from
	text string
}

// source is one file to read and how to clean it.
type source struct {
	path string
	man  bool // troff markup
}

// debianSources lists the readable texts of this system: word lists, the
// common licences, every package's copyright, README and NEWS files, and the
// English man pages (sections 1–8).
func debianSources() []source {
	var out []source
	add := func(pattern string, man bool) {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.Size() > 0 && st.Size() < 4<<20 {
				out = append(out, source{path: f, man: man})
			}
		}
	}
	add("/usr/share/dict/*", false)
	add("/usr/share/common-licenses/*", false)
	add("/usr/share/doc/*/copyright", false)
	add("/usr/share/doc/*/README*", false)
	add("/usr/share/doc/*/NEWS*", false)
	add("/usr/share/doc/*/changelog*", false)
	for s := 1; s <= 8; s++ {
		add("/usr/share/man/man"+string(rune('0'+s))+"/*", true)
	}
	return out
}

// loadDocuments reads and cleans every source in parallel, dropping
// duplicates (the same licence text ships in hundreds of copyright files)
// and texts too short to matter. The order is deterministic.
func loadDocuments(srcs []source) []document {
	docs := make([]document, len(srcs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				docs[i] = readDocument(srcs[i])
			}
		}()
	}
	for i := range srcs {
		next <- i
	}
	close(next)
	wg.Wait()
	seen := map[[32]byte]bool{}
	ids := map[string]int{}
	var out []document
	for _, d := range docs {
		if len(d.text) < 200 {
			continue
		}
		h := sha256.Sum256([]byte(d.text))
		if seen[h] {
			continue
		}
		seen[h] = true
		if n := ids[d.id]; n > 0 {
			ids[d.id] = n + 1
			d.id = d.id + "-" + itoa(n)
		} else {
			ids[d.id] = 1
		}
		out = append(out, d)
	}
	return out
}

func readDocument(s source) document {
	f, err := os.Open(s.path)
	if err != nil {
		return document{}
	}
	defer func() { _ = f.Close() }()
	var r io.Reader = f
	name := s.path
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return document{}
		}
		r = zr
		name = strings.TrimSuffix(name, ".gz")
	}
	raw, err := io.ReadAll(io.LimitReader(r, 8<<20))
	if err != nil || bytes.IndexByte(raw, 0) >= 0 || !utf8.Valid(raw) {
		return document{} // binary, or not UTF-8: not text we can use
	}
	text := string(raw)
	if s.man {
		text = stripTroff(text)
	} else {
		text = normalizeParagraphs(text)
	}
	rel := strings.TrimPrefix(name, "/usr/share/")
	return document{id: safeID(rel), uri: "file:///usr/share/" + rel, text: text}
}

func safeID(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append(b, byte('0'+n%10))
	}
	slices.Reverse(b)
	return string(b)
}

// normalizeParagraphs collapses runs of blank lines to one and trims lines.
func normalizeParagraphs(text string) string {
	var b strings.Builder
	blank := true
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			if !blank {
				b.WriteString("\n\n")
			}
			blank = true
			continue
		}
		if !blank {
			b.WriteByte('\n')
		}
		b.WriteString(line)
		blank = false
	}
	return strings.TrimSpace(b.String())
}

// troff: requests and macros whose arguments are text to keep, and those
// that start a new paragraph.
var (
	keepArgs = set("B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB", "SH", "SS", "TP", "IP",
		"Nm", "Nd", "Ar", "Fl", "Op", "Xr", "Pa", "Em", "Sy", "Dq", "Ql", "Li", "Cm", "Ev", "Va", "Dv",
		"Fn", "Fa", "Ft", "Ic", "Tn", "Aq", "Sq", "Pq", "No", "D1", "Dl", "It", "Sh", "Ss", "Er", "Xo", "Xc", "Ux")
	breaks = set("SH", "SS", "PP", "LP", "P", "IP", "TP", "HP", "sp", "Sh", "Ss", "Pp", "Lp", "It", "Bl", "El", "Bd", "Ed")
	// inline escapes: fonts, sizes, named characters, strings, motions.
	escapeRE   = regexp.MustCompile(`\\(f(\(..|\[[^\]]*\]|.)|s[-+]?\d+|\(..|\[[^\]]*\]|\*(\(..|\[[^\]]*\]|.)|n(\(..|\[[^\]]*\]|.)|[hvwlLoDbxNZ]'[^']*'|.)`)
	namedChars = map[string]string{`\(em`: "—", `\(en`: "–", `\(bu`: "•", `\(aq`: "'", `\(dq`: `"`, `\(lq`: `"`,
		`\(rq`: `"`, `\(oq`: "'", `\(cq`: "'", `\(co`: "©", `\(mi`: "-", `\(hy`: "-", `\(ti`: "~", `\(ga`: "`",
		`\[em]`: "—", `\[en]`: "–", `\[aq]`: "'", `\[dq]`: `"`, `\-`: "-", `\e`: `\`, `\ `: " ", `\~`: " ", `\0`: " ",
		`\.`: ".", `\'`: "'", "\\`": "`"}
)

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

// stripTroff turns a man page into plain paragraphs, roughly: comments,
// definitions and layout requests go, font macros keep their words, and
// inline escapes become their character or nothing.
func stripTroff(src string) string {
	var b strings.Builder
	inDef := false
	para := func() { b.WriteString("\n\n") }
	for _, line := range strings.Split(src, "\n") {
		if inDef {
			if strings.HasPrefix(line, "..") {
				inDef = false
			}
			continue
		}
		if i := strings.Index(line, `\"`); i >= 0 {
			line = line[:i]
			if strings.TrimSpace(line) == "." || strings.TrimSpace(line) == "'" {
				continue
			}
		}
		if strings.HasPrefix(line, `\#`) {
			continue
		}
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			fields := strings.Fields(line[1:])
			if len(fields) == 0 {
				continue
			}
			name := fields[0]
			switch name {
			case "de", "de1", "am", "ig":
				inDef = true
				continue
			case "so":
				return "" // a link to another page
			}
			if breaks[name] {
				para()
			}
			if keepArgs[name] && len(fields) > 1 {
				args := strings.Join(fields[1:], " ")
				if name == "IP" { // a bullet or label, then an indent
					args = fields[1]
				}
				b.WriteString(strings.ReplaceAll(args, `"`, ""))
				b.WriteByte('\n')
			}
			if name == "SH" || name == "SS" || name == "Sh" || name == "Ss" {
				para()
			}
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	out := escapeRE.ReplaceAllStringFunc(b.String(), func(m string) string {
		return namedChars[m]
	})
	return normalizeParagraphs(out)
}

// sentences splits a cleaned document into sentences that read like prose:
// 40–300 bytes, at least six words, mostly letters.
func sentences(text string) []string {
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		p := strings.Join(strings.Fields(para), " ")
		start := 0
		for i := 0; i < len(p); i++ {
			c := p[i]
			if c != '.' && c != '?' && c != '!' {
				continue
			}
			if i+2 < len(p) && p[i+1] == ' ' && (unicode.IsUpper(rune(p[i+2])) || p[i+2] == '"') {
				out = appendSentence(out, p[start:i+1])
				start = i + 2
			}
		}
		out = appendSentence(out, p[start:])
	}
	return out
}

func appendSentence(out []string, s string) []string {
	s = strings.TrimSpace(s)
	if len(s) < 40 || len(s) > 300 || len(strings.Fields(s)) < 6 {
		return out
	}
	letters := 0
	for _, r := range s {
		if unicode.IsLetter(r) || r == ' ' {
			letters++
		}
	}
	if float64(letters) < 0.8*float64(utf8.RuneCountInString(s)) {
		return out
	}
	return append(out, s)
}

// textCorpus is everything both regimes draw from: the documents split into
// a corpus side and a held-out side whose sentences are the queries.
type textCorpus struct {
	docs      []document // corpus side, shuffled
	sentences []string   // corpus side's sentences, deduplicated, in document order
	queries   []string   // held-out documents' sentences, not in sentences
	heldOut   int        // documents held out
}

func buildTextCorpus(docs []document, rng *rand.Rand) textCorpus {
	docs = slices.Clone(docs)
	rng.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	var tc textCorpus
	seen := map[string]bool{}
	var held []document
	for i, d := range docs {
		if i%20 == 0 { // 5% of documents held out for queries
			held = append(held, d)
			continue
		}
		tc.docs = append(tc.docs, d)
		for _, s := range sentences(d.text) {
			if !seen[s] {
				seen[s] = true
				tc.sentences = append(tc.sentences, s)
			}
		}
	}
	tc.heldOut = len(held)
	for _, d := range held {
		for _, s := range sentences(d.text) {
			if !seen[s] {
				seen[s] = true
				tc.queries = append(tc.queries, s)
			}
		}
	}
	return tc
}
