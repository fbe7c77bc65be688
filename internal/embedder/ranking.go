package embedder

import "github.com/footprint/footprint/internal/core"

// The ranking defaults of each kind of embedder: what a topK memory uses when it sets no
// ranking, alpha or threshold. The figures are measured by bench/quality (docs/benchmarks.md,
// "Retrieval quality" and "Default thresholds"), on the man pages and documents this Debian
// system ships; rerun it after any change to the built-in embedder or to the lexical score.

// Calibrated values (bench/quality, -calibrate).
const (
	// hashAlpha is the hybrid's vector weight with the built-in embedder.
	hashAlpha = 0.1
	// Default thresholds with the built-in embedder, per ranking.
	hashVectorThreshold = 0.28
	hashHybridThreshold = 0.18
	// LexicalThreshold is the lexical ranking's default on every embedder: the lexical score
	// does not depend on the embedder.
	LexicalThreshold = 0.17
)

const calibration = "bench/quality -calibrate: the threshold with the best F1 at telling a query's related " +
	"messages from unrelated ones, in conversations built from the man pages this system ships " +
	"(docs/benchmarks.md, \"Default thresholds\")"

// HashRanking is the built-in embedder's: hybrid, every threshold calibrated.
func HashRanking() core.RankingDefaults {
	return core.RankingDefaults{Ranking: core.RankHybrid, Alpha: hashAlpha, Calibration: calibration,
		Thresholds: map[core.Ranking]float64{core.RankVector: hashVectorThreshold, core.RankLexical: LexicalThreshold, core.RankHybrid: hashHybridThreshold}}
}

// RemoteRanking is a client's or a provider's embedder's: vector, as before, and no calibrated
// vector or hybrid threshold (this server cannot measure a model it cannot run offline); the
// lexical ranking's threshold is the same on every embedder.
func RemoteRanking() core.RankingDefaults {
	return core.RankingDefaults{Ranking: core.RankVector, Alpha: hashAlpha,
		Calibration: "vector and hybrid thresholds are not calibrated for this embedder (a causal memory uses the seed's 0.7 on vector); " +
			"the lexical threshold is the built-in embedder's, since a lexical score does not depend on the embedder: " + calibration,
		Thresholds: map[core.Ranking]float64{core.RankLexical: LexicalThreshold}}
}
