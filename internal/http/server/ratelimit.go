package server

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// rateLimitPolicy is the policy name published in the RateLimit and
// RateLimit-Policy headers (draft-ietf-httpapi-ratelimit-headers).
const rateLimitPolicy = "tenant"

// tenantLimiter is a token bucket per authenticated tenant: perSecond
// tokens refill every second, up to burst. Its memory is bounded by the
// number of tenants, which the configured API keys bound (one when open).
type tenantLimiter struct {
	perSecond rate.Limit
	burst     int
	window    int // seconds for an empty bucket to refill: the policy's w
	now       func() time.Time

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

// newTenantLimiter returns nil (no limiting) when perSecond <= 0.
func newTenantLimiter(perSecond float64, burst int) *tenantLimiter {
	if perSecond <= 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) {
		return nil
	}
	if burst <= 0 {
		burst = max(1, int(math.Ceil(2*perSecond)))
	}
	return &tenantLimiter{
		perSecond: rate.Limit(perSecond),
		burst:     burst,
		window:    max(1, int(math.Ceil(float64(burst)/perSecond))),
		now:       time.Now,
		limiters:  map[string]*rate.Limiter{},
	}
}

func (l *tenantLimiter) limiter(tenant string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.limiters[tenant]
	if !ok {
		lim = rate.NewLimiter(l.perSecond, l.burst)
		l.limiters[tenant] = lim
	}
	return lim
}

// middleware sits after authentication (it needs the tenant) and before
// request validation (a flood of invalid requests costs tokens too). Every
// response it lets through carries RateLimit and RateLimit-Policy; a refusal
// is 429 `rate-limited` with Retry-After.
func (l *tenantLimiter) middleware(next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	policy := fmt.Sprintf("%q;q=%d;w=%d", rateLimitPolicy, l.burst, l.window)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lim := l.limiter(tenantFrom(r.Context()))
		now := l.now()
		allowed := lim.AllowN(now, 1)
		tokens := max(0, lim.TokensAt(now))
		remaining := int(math.Floor(tokens))
		// t: seconds until the bucket is full again (the quota resets).
		reset := int(math.Ceil((float64(l.burst) - tokens) / float64(l.perSecond)))
		h := w.Header()
		h.Set("RateLimit-Policy", policy)
		h.Set("RateLimit", fmt.Sprintf("%q;r=%d;t=%d", rateLimitPolicy, remaining, max(0, reset)))
		if allowed {
			next.ServeHTTP(w, r)
			return
		}
		// Seconds until one token is back, rounded up, at least 1.
		wait := max(1, int(math.Ceil((1-tokens)/float64(l.perSecond))))
		p := newProblem(http.StatusTooManyRequests, "rate-limited",
			"Too many requests for this API key; retry after "+strconv.Itoa(wait)+" s. "+
				"The RateLimit-Policy header gives the quota.")
		p.retryAfter = wait
		writeProblem(w, r, p)
	})
}
