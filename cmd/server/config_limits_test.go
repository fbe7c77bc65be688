package main

import (
	"strings"
	"testing"
	"time"
)

func TestRateLimitAndDrainConfig(t *testing.T) {
	load := func(env map[string]string) (Config, error) {
		return loadConfig(func(k string) string { return env[k] })
	}
	c, err := load(nil)
	if err != nil || c.RateLimit != 200 || c.RateBurst != 400 || c.DrainDelay != 0 {
		t.Errorf("defaults: rate %v burst %d drain %v err %v; want 200, 400, 0", c.RateLimit, c.RateBurst, c.DrainDelay, err)
	}
	c, err = load(map[string]string{"FOOTPRINT_RATE_LIMIT": "0", "FOOTPRINT_DRAIN_DELAY": "0"})
	if err != nil || c.RateLimit != 0 {
		t.Errorf("rate 0 (off): %v %v", c.RateLimit, err)
	}
	c, err = load(map[string]string{"FOOTPRINT_RATE_LIMIT": "2.5", "FOOTPRINT_DRAIN_DELAY": "2s"})
	if err != nil || c.RateLimit != 2.5 || c.RateBurst != 5 || c.DrainDelay != 2*time.Second {
		t.Errorf("rate 2.5: rate %v burst %d drain %v err %v; want burst 5 (twice the rate)", c.RateLimit, c.RateBurst, c.DrainDelay, err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"FOOTPRINT_RATE_LIMIT": "lots"}, "FOOTPRINT_RATE_LIMIT"},
		{map[string]string{"FOOTPRINT_RATE_LIMIT": "-1"}, "FOOTPRINT_RATE_LIMIT"},
		{map[string]string{"FOOTPRINT_RATE_BURST": "0"}, "FOOTPRINT_RATE_BURST"},
		{map[string]string{"FOOTPRINT_DRAIN_DELAY": "20s"}, "FOOTPRINT_DRAIN_DELAY"},
	} {
		if _, err := load(tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want mention of %s", tc.env, err, tc.want)
		}
	}
}
