package app

import (
	"context"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/memories"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/runs"
	"github.com/footprint/footprint/internal/core/turns"
)

// Store is everything the service needs from a persistence backend.
type Store interface {
	memories.Store
	turns.Store
	recall.Store
	explain.Store
	runs.Store
	// Ping reports whether the backend is reachable (for /readyz).
	Ping(ctx context.Context) error
	// Info describes the backend for /v1/capabilities.
	Info() core.StoreInfo
}
