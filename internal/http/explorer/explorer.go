// Package explorer serves the evidence explorer: a browser UI over the public API, at
// /explorer/. It is plain HTML, CSS and JavaScript modules embedded in the binary (assets/):
// no build step, no third-party code, no request to anywhere but this server. Everything it
// shows comes from /v1 calls any other frontend could make.
package explorer

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Prefix is where the explorer is served.
const Prefix = "/explorer/"

// contentSecurityPolicy lets the page load only this server's own scripts, styles and API: an
// injected <script> or inline event handler cannot run even if text were ever rendered as
// markup (it never is: the scripts build the DOM with text nodes).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type file struct {
	body  []byte
	etag  string
	ctype string
}

// Handler serves the explorer's files under Prefix; notFound answers any other path under it.
func Handler(notFound http.Handler) http.Handler {
	files := map[string]file{}
	_ = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		if path.Ext(p) == ".js" {
			ctype = "text/javascript; charset=utf-8" // whatever the host's MIME tables say
		}
		files[strings.TrimPrefix(p, "assets/")] = file{body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: ctype}
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name == "" {
			name = "index.html"
		}
		f, ok := files[name]
		if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			notFound.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("ETag", f.etag)
		// Revalidate every time: the files change with the binary, and a 304 costs nothing.
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
	})
}
