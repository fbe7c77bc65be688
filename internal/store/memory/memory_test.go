package memory_test

import (
	"testing"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) app.Store { return memory.New() })
}

func TestInfo(t *testing.T) {
	if got, want := memory.New().Info(), (core.StoreInfo{Kind: "memory", RanksVectors: true}); got != want {
		t.Errorf("Info() = %+v, want %+v", got, want)
	}
}
