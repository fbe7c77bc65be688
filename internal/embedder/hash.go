package embedder

import (
	"context"
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"

	"github.com/footprint/footprint/internal/core"
)

// Hash dimension bounds and the default used when FOOTPRINT_EMBEDDERS is empty.
const (
	MinHashDims     = 8
	MaxHashDims     = 4096
	DefaultHashDims = 384
)

// HashModel names the hashing scheme documented on Hash. Vectors from
// different schemes are not comparable, so any change to tokenisation,
// feature strings, hash, weights or index/sign derivation must come with a
// new model name (the golden test in hash_test.go fails to remind you).
const HashModel = "footprint-hash-v1"

// Feature weights. A word counts fully; a word pair adds some word-order
// signal; character n-grams are many per word (about three per letter), so
// each is weighted low — together they still let "embedder" and "embedders"
// land near each other without drowning whole-word matches.
const (
	weightWord    = 1.0
	weightBigram  = 0.5
	weightNgram   = 0.25
	minNgram      = 3
	maxNgram      = 5
	fnvOffset64   = 14695981039346656037
	fnvPrime64    = 1099511628211
	tagWord       = 'w'
	tagBigram     = 'b'
	tagNgram      = 'c'
	wordStartMark = '<'
	wordEndMark   = '>'
)

// Hash is the built-in offline embedder: deterministic signed feature hashing
// of a text's words, word bigrams and character n-grams. It is LEXICAL, not
// semantic — texts are close when they share words and spellings, not when
// they share meaning — but it needs no network, no model and no key, and the
// same text gives the same vector in every process and on every platform.
//
// The scheme (footprint-hash-v1):
//
//   - Words are maximal runs of Unicode letters, digits and combining marks
//     (marks are kept so that decomposed accents and Indic vowel signs do
//     not split words), lower-cased with unicode.ToLower; everything else
//     separates words.
//   - Features are byte strings: "w"+word (weight 1.0), "b"+w1+" "+w2 for
//     each adjacent pair (weight 0.5), and "c"+g for every character 3-, 4-
//     and 5-gram g of "<"+word+">" (weight 0.25, counted in runes). The tag
//     byte keeps a word and an identical n-gram apart.
//   - Each feature is hashed with 64-bit FNV-1a followed by MurmurHash3's
//     64-bit finaliser (FNV-1a alone mixes its low bits poorly, and the low
//     bits pick the index). index = h % dims; the sign is the top bit of h
//     (set: subtract). Repeated features accumulate.
//   - The sum is L2-normalised.
//
// Hash is safe for concurrent use.
type Hash struct {
	id        string
	dims      int
	isDefault bool
}

var _ core.Embedder = (*Hash)(nil)

// NewHash returns a Hash embedder with the given id and dimension. It
// returns an error if id does not match core.IDPattern or dims is outside
// [MinHashDims, MaxHashDims].
func NewHash(id string, dims int) (*Hash, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if dims < MinHashDims || dims > MaxHashDims {
		return nil, fmt.Errorf("hash embedder %q: dims must be %d..%d, got %d", id, MinHashDims, MaxHashDims, dims)
	}
	return &Hash{id: id, dims: dims}, nil
}

// Info describes the embedder.
func (h *Hash) Info() core.EmbedderInfo {
	return core.EmbedderInfo{
		ID:         h.id,
		Kind:       KindHash,
		Model:      HashModel,
		Dimensions: h.dims,
		Default:    h.isDefault,
		Description: "Built-in offline embedder (feature hashing of words, word pairs and character n-grams). " +
			"LEXICAL, not semantic: texts score as similar when they share words and spellings, not when they " +
			"mean the same thing in different words. Deterministic; needs no network or key.",
		Ranking: HashRanking(),
	}
}

// Embed returns one unit vector of Info().Dimensions per text, in order. A
// text with no letters or digits has nothing to hash (its vector would be
// zero, which no store can rank), so Embed returns an error wrapping
// core.ErrInvalid that names the text's position.
func (h *Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	if len(texts) == 0 {
		return out, nil
	}
	// One backing array for the whole batch; scratch buffers are reused
	// across words and texts, so the per-feature path allocates nothing.
	backing := make([]float32, len(texts)*h.dims)
	s := hashScratch{word: make([]byte, 0, 64), offs: make([]int, 0, 65)}
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vec := backing[i*h.dims : (i+1)*h.dims : (i+1)*h.dims]
		if s.embed(text, vec) == 0 {
			return nil, fmt.Errorf("embedder %q: text %d has no words to embed (it needs at least one letter or digit): %w", h.id, i, core.ErrInvalid)
		}
		if !normalize(vec) {
			// Signed features cancelled out exactly. Vanishingly rare, but
			// a zero vector must never leave this package.
			return nil, fmt.Errorf("embedder %q: text %d hashed to a zero vector; add more words: %w", h.id, i, core.ErrInvalid)
		}
		out[i] = vec
	}
	return out, nil
}

// hashScratch holds the buffers for one Embed call.
type hashScratch struct {
	word []byte // the current word, lower-cased UTF-8
	offs []int  // byte offset of each rune of word, plus len(word)
}

// embed adds the features of text to vec (which must be zero) and returns
// how many words it found.
func (s *hashScratch) embed(text string, vec []float32) int {
	dims := uint64(len(vec))
	var (
		words      int
		prevBigram uint64 // FNV state after "b"+previous word+" "
	)
	s.word, s.offs = s.word[:0], s.offs[:0]
	flush := func() {
		if len(s.word) == 0 {
			return
		}
		s.offs = append(s.offs, len(s.word))
		word := s.word
		addFeature(vec, dims, fnvBytes(fnvByte(fnvOffset64, tagWord), word), weightWord)
		if words > 0 {
			addFeature(vec, dims, fnvBytes(prevBigram, word), weightBigram)
		}
		prevBigram = fnvByte(fnvBytes(fnvByte(fnvOffset64, tagBigram), word), ' ')
		s.addNgrams(vec, dims)
		words++
		s.word, s.offs = s.word[:0], s.offs[:0]
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			default:
				flush()
				continue
			}
			s.offs = append(s.offs, len(s.word))
			s.word = append(s.word, c)
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) {
			flush()
			continue
		}
		s.offs = append(s.offs, len(s.word))
		s.word = utf8.AppendRune(s.word, unicode.ToLower(r))
	}
	flush()
	return words
}

// addNgrams adds the character n-grams of "<"+word+">". Padded position 0
// is "<", positions 1..n are the word's runes, n+1 is ">".
func (s *hashScratch) addNgrams(vec []float32, dims uint64) {
	runes := len(s.offs) - 1
	padded := runes + 2
	for n := minNgram; n <= maxNgram; n++ {
		for p := 0; p+n <= padded; p++ {
			last := p + n - 1 // padded position of the gram's last rune
			h := fnvByte(fnvOffset64, tagNgram)
			if p == 0 {
				h = fnvByte(h, wordStartMark)
			}
			from, to := max(p, 1)-1, min(last, runes) // word runes [from, to)
			h = fnvBytes(h, s.word[s.offs[from]:s.offs[to]])
			if last == runes+1 {
				h = fnvByte(h, wordEndMark)
			}
			addFeature(vec, dims, h, weightNgram)
		}
	}
}

func addFeature(vec []float32, dims, h uint64, w float32) {
	h = mix64(h)
	i := h % dims
	if h>>63 != 0 {
		vec[i] -= w
	} else {
		vec[i] += w
	}
}

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime64 }

func fnvBytes(h uint64, bs []byte) uint64 {
	for _, b := range bs {
		h = (h ^ uint64(b)) * fnvPrime64
	}
	return h
}

// mix64 is MurmurHash3's 64-bit finaliser: every output bit depends on every
// input bit, which FNV-1a does not give its low bits.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// normalize scales vec to unit L2 norm in place. It reports false, leaving
// vec unchanged, if the norm is zero or not finite.
func normalize(vec []float32) bool {
	var sum float64
	for _, x := range vec {
		sum += float64(x) * float64(x)
	}
	norm := math.Sqrt(sum)
	if norm == 0 || math.IsInf(norm, 0) || math.IsNaN(norm) {
		return false
	}
	inv := 1 / norm
	for i, x := range vec {
		vec[i] = float32(float64(x) * inv)
	}
	return true
}
