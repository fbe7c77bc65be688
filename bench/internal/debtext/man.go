package debtext

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// ManPage is one man page split into what its NAME section says and the rest.
type ManPage struct {
	ID  string // safe for an entry id
	URI string
	// Names are the commands (or functions, files) the NAME line names, lower-cased.
	Names []string
	// Description is the NAME line's text after the dash ("compress or expand files").
	Description string
	// Body is the rest of the page, cleaned to paragraphs: the NAME section left out.
	Body string
}

// ManPages reads the English man pages of the given sections (1–8) that have a NAME line with
// a description and a body of at least minBody bytes, in a deterministic order (by path).
// Pages that only include another (.so) are skipped.
func ManPages(sections []int, minBody int) []ManPage {
	var paths []string
	for _, s := range sections {
		files, _ := filepath.Glob("/usr/share/man/man" + Itoa(s) + "/*")
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.Size() > 0 && st.Size() < 4<<20 {
				paths = append(paths, f)
			}
		}
	}
	slices.Sort(paths)
	pages := make([]ManPage, len(paths))
	ok := make([]bool, len(paths))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				pages[i], ok[i] = readManPage(paths[i], minBody)
			}
		}()
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	var out []ManPage
	seen := map[string]bool{}
	for i, p := range pages {
		if !ok[i] || seen[p.Body] {
			continue
		}
		seen[p.Body] = true
		out = append(out, p)
	}
	return out
}

func readManPage(path string, minBody int) (ManPage, bool) {
	raw, name, ok := readText(path)
	if !ok {
		return ManPage{}, false
	}
	lines := strings.Split(raw, "\n")
	var nameLines, rest []string
	inName := false
	for _, l := range lines {
		if strings.HasPrefix(l, ".so ") {
			return ManPage{}, false
		}
		if h, isHeading := heading(l); isHeading {
			inName = strings.EqualFold(h, "NAME")
			if inName {
				continue
			}
		}
		if inName {
			nameLines = append(nameLines, l)
			continue
		}
		rest = append(rest, l)
	}
	names, desc := splitNameLine(nameLines)
	if len(names) == 0 || len(strings.Fields(desc)) < 2 {
		return ManPage{}, false
	}
	body := StripTroff(strings.Join(rest, "\n"))
	if len(body) < minBody {
		return ManPage{}, false
	}
	rel := strings.TrimPrefix(name, "/usr/share/")
	return ManPage{ID: SafeID(rel), URI: "file:///usr/share/" + rel, Names: names, Description: desc, Body: body}, true
}

// heading returns a section heading's title (.SH NAME, .SH "NAME", .Sh NAME).
func heading(line string) (string, bool) {
	for _, p := range []string{".SH", ".Sh"} {
		if strings.HasPrefix(line, p+" ") || line == p {
			return strings.Trim(strings.TrimSpace(line[len(p):]), `"`), true
		}
	}
	return "", false
}

// splitNameLine reads the NAME section: man(7)'s "name, name \- description" or mdoc's .Nm
// and .Nd macros.
func splitNameLine(lines []string) ([]string, string) {
	var names []string
	var desc string
	var text []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, ".Nm "):
			names = append(names, strings.Fields(l[4:])[0])
		case strings.HasPrefix(l, ".Nd "):
			desc = l[4:]
		case strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'"):
			if f := strings.Fields(l[1:]); len(f) > 1 && keepArgs[f[0]] {
				text = append(text, strings.Join(f[1:], " "))
			}
		default:
			text = append(text, l)
		}
	}
	if desc == "" {
		joined := strings.Join(text, " ")
		// The dash between names and description: " \- " as man(7) writes it; a "\-" inside a
		// name (lwp\-request) is part of the name.
		i, sep := -1, 0
		for _, d := range []string{` \- `, ` \(em `, ` \(en `, " - ", `\- `} {
			if i = strings.Index(joined, d); i >= 0 {
				sep = len(d)
				break
			}
		}
		if i < 0 {
			return nil, ""
		}
		for _, n := range strings.Split(joined[:i], ",") {
			if n = strings.TrimSpace(clean(n)); n != "" {
				names = append(names, n)
			}
		}
		desc = joined[i+sep:]
	}
	desc = strings.Join(strings.Fields(clean(desc)), " ")
	for i, n := range names {
		names[i] = strings.ToLower(clean(n))
	}
	return names, desc
}

// clean drops troff escapes and quotes from a line of text.
func clean(s string) string {
	s = escapeRE.ReplaceAllStringFunc(s, func(m string) string { return namedChars[m] })
	return strings.ReplaceAll(s, `"`, "")
}
