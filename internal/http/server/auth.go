package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/footprint/footprint/internal/core"
)

// APIKey binds a key to the tenant it authenticates.
type APIKey struct {
	Tenant string
	Key    string
}

// keyring holds API keys only as SHA-256 hashes. Lookups hash the presented
// key and compare against every stored hash in constant time, so neither the
// keys nor their number of matching prefix bytes leak through timing.
type keyring struct {
	hashes  [][sha256.Size]byte
	tenants []string
}

func newKeyring(keys []APIKey) *keyring {
	k := &keyring{}
	for _, key := range keys {
		k.hashes = append(k.hashes, sha256.Sum256([]byte(key.Key)))
		k.tenants = append(k.tenants, key.Tenant)
	}
	return k
}

// open reports whether no keys are configured (single-tenant mode).
func (k *keyring) open() bool { return len(k.hashes) == 0 }

func (k *keyring) tenant(presented string) (string, bool) {
	h := sha256.Sum256([]byte(presented))
	found := -1
	for i := range k.hashes {
		if subtle.ConstantTimeCompare(h[:], k.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return k.tenants[found], true
}

// authenticate resolves the tenant from `Authorization: Bearer <key>`. With
// no keys configured every request belongs to core.DefaultTenant.
func (k *keyring) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant := core.DefaultTenant
		if !k.open() {
			auth := r.Header.Get("Authorization")
			scheme, key, ok := strings.Cut(auth, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" {
				writeProblem(w, r, newProblem(http.StatusUnauthorized, "unauthorized",
					"Send your API key as `Authorization: Bearer <key>`."))
				return
			}
			var found bool
			if tenant, found = k.tenant(strings.TrimSpace(key)); !found {
				writeProblem(w, r, newProblem(http.StatusUnauthorized, "unauthorized", "The API key is not valid."))
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey, tenant)))
	})
}

// tenantFrom returns the authenticated tenant. Handlers behind authenticate
// always have one; an empty result means a wiring bug.
func tenantFrom(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey).(string)
	return t
}
