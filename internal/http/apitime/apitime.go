// Package apitime is the one time format of footprint's API: RFC 3339 in UTC with exactly
// three fractional digits, "2026-11-30T06:05:39.123Z", whatever precision the store kept
// (Postgres keeps microseconds, the in-memory store what it was given) and whether or not the
// instant falls on a whole second. encoding/json writes a time.Time with as many digits as it
// has, none for a whole second, so two resources read back from two stores, or one resource
// created at a whole second, printed differently.
//
// api/oapi-codegen.yaml maps every `format: date-time` string of the spec to Time, so every
// time the API writes goes through MarshalJSON. Times the API reads (a run's `startedAt`)
// accept any RFC 3339 time, with any number of fractional digits and any offset.
package apitime

import (
	"encoding/json"
	"fmt"
	"time"
)

// Layout is the API's time format; times are converted to UTC before formatting, and
// digits beyond milliseconds are cut, not rounded (a time never moves into the future).
const Layout = "2006-01-02T15:04:05.000Z"

// Time is a time.Time that marshals in Layout.
type Time struct{ time.Time }

// Of returns t as an API time.
func Of(t time.Time) Time { return Time{t} }

// Opt returns t as an API time, or nil for the zero time (an absent, unknown time).
func Opt(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t}
}

// Format returns t in Layout.
func Format(t time.Time) string { return t.UTC().Format(Layout) }

// String returns the time in Layout.
func (t Time) String() string { return Format(t.Time) }

// MarshalJSON writes the time in Layout.
func (t Time) MarshalJSON() ([]byte, error) {
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("apitime: year %d outside RFC 3339's range", y)
	}
	b := make([]byte, 0, len(Layout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, Layout)
	return append(b, '"'), nil
}

// MarshalText writes the time in Layout (query parameters, headers).
func (t Time) MarshalText() ([]byte, error) {
	b, err := t.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return b[1 : len(b)-1], nil
}

// UnmarshalJSON reads any RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("apitime: a time is a string: %w", err)
	}
	return t.UnmarshalText([]byte(s))
}

// UnmarshalText reads any RFC 3339 time.
func (t *Time) UnmarshalText(b []byte) error {
	v, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return fmt.Errorf("apitime: not an RFC 3339 time: %w", err)
	}
	t.Time = v
	return nil
}
