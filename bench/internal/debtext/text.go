// Package debtext reads the real text a Debian system ships (man pages, licences, copyright,
// README, NEWS and changelog files) for the benchmarks: cleaned, deduplicated, deterministic.
package debtext

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

// Document is one text that ships in a Debian package, cleaned to plain
// paragraphs separated by blank lines.
type Document struct {
	ID   string // safe for an entry id: [a-z0-9._-]
	URI  string // where it came from
	Text string
}

// Source is one file to read and how to clean it.
type Source struct {
	Path string
	Man  bool // troff markup
}

// DebianSources lists the readable texts of this system: word lists, the
// common licences, every package's copyright, README and NEWS files, and the
// English man pages (sections 1–8).
func DebianSources() []Source {
	var out []Source
	add := func(pattern string, man bool) {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.Size() > 0 && st.Size() < 4<<20 {
				out = append(out, Source{Path: f, Man: man})
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

// LoadDocuments reads and cleans every Source in parallel, dropping
// duplicates (the same licence text ships in hundreds of copyright files)
// and texts too short to matter. The order is deterministic.
func LoadDocuments(srcs []Source) []Document {
	docs := make([]Document, len(srcs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				docs[i] = ReadDocument(srcs[i])
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
	var out []Document
	for _, d := range docs {
		if len(d.Text) < 200 {
			continue
		}
		h := sha256.Sum256([]byte(d.Text))
		if seen[h] {
			continue
		}
		seen[h] = true
		if n := ids[d.ID]; n > 0 {
			ids[d.ID] = n + 1
			d.ID = d.ID + "-" + Itoa(n)
		} else {
			ids[d.ID] = 1
		}
		out = append(out, d)
	}
	return out
}

// ReadDocument reads and cleans one source; a zero Document when it is not text.
func ReadDocument(s Source) Document {
	raw, name, ok := readText(s.Path)
	if !ok {
		return Document{}
	}
	text := raw
	if s.Man {
		text = StripTroff(text)
	} else {
		text = NormalizeParagraphs(text)
	}
	rel := strings.TrimPrefix(name, "/usr/share/")
	return Document{ID: SafeID(rel), URI: "file:///usr/share/" + rel, Text: text}
}

// readText reads a file, gunzipped when its name ends in .gz; ok is false for a file that is
// not UTF-8 text. name is the path without .gz.
func readText(path string) (text, name string, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", false
	}
	defer func() { _ = f.Close() }()
	var r io.Reader = f
	name = path
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return "", "", false
		}
		r = zr
		name = strings.TrimSuffix(name, ".gz")
	}
	raw, err := io.ReadAll(io.LimitReader(r, 8<<20))
	if err != nil || bytes.IndexByte(raw, 0) >= 0 || !utf8.Valid(raw) {
		return "", "", false // binary, or not UTF-8: not text we can use
	}
	return string(raw), name, true
}

func SafeID(s string) string {
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

func Itoa(n int) string {
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

// NormalizeParagraphs collapses runs of blank lines to one and trims lines.
func NormalizeParagraphs(text string) string {
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

// StripTroff turns a man page into plain paragraphs, roughly: comments,
// definitions and layout requests go, font macros keep their words, and
// inline escapes become their character or nothing.
func StripTroff(src string) string {
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
	return NormalizeParagraphs(out)
}

// Sentences splits a cleaned document into sentences that read like prose:
// 40–300 bytes, at least six words, mostly letters.
func Sentences(text string) []string {
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

// TextCorpus is everything both regimes draw from: the documents split into
// a corpus side and a held-out side whose sentences are the queries.
type TextCorpus struct {
	Docs      []Document // corpus side, shuffled
	Sentences []string   // corpus side's sentences, deduplicated, in document order
	Queries   []string   // held-out documents' sentences, not in Sentences
	HeldOut   int        // documents held out
}

// BuildTextCorpus shuffles docs and holds one in twenty out for queries.
func BuildTextCorpus(docs []Document, rng *rand.Rand) TextCorpus {
	docs = slices.Clone(docs)
	rng.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	var tc TextCorpus
	seen := map[string]bool{}
	var held []Document
	for i, d := range docs {
		if i%20 == 0 { // 5% of documents held out for queries
			held = append(held, d)
			continue
		}
		tc.Docs = append(tc.Docs, d)
		for _, s := range Sentences(d.Text) {
			if !seen[s] {
				seen[s] = true
				tc.Sentences = append(tc.Sentences, s)
			}
		}
	}
	tc.HeldOut = len(held)
	for _, d := range held {
		for _, s := range Sentences(d.Text) {
			if !seen[s] {
				seen[s] = true
				tc.Queries = append(tc.Queries, s)
			}
		}
	}
	return tc
}
