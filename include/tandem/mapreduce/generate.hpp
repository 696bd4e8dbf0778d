// Data generators: Zipf keys and Zipf text (also behind `tandem gen zipf` and `tandem gen text`).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tandem::mapreduce {

// n Zipf-distributed ranks in [0, distinct): P(rank r) ~ 1/(r+1)^exponent (exponent 0: uniform).
// Deterministic for a seed, whatever the thread count.
std::vector<std::uint64_t> zipf_ranks(std::size_t n, std::uint64_t distinct, double exponent, std::uint64_t seed);
// Ranks turned into keys scattered over the key range by a bijection, scatter32 (rank 0 is not
// key 0).
std::vector<std::uint32_t> zipf_keys_u32(std::size_t n, std::uint64_t distinct, double exponent, std::uint64_t seed);
std::vector<std::uint64_t> zipf_keys_u64(std::size_t n, std::uint64_t distinct, double exponent, std::uint64_t seed);
// A vocabulary of `words` distinct pseudo-words (lengths 1..14, every 101st word 40..60 bytes long)
// and ~`bytes` of text drawing them Zipf(exponent), separated by spaces, punctuation and newlines.
std::vector<std::string> make_vocabulary(std::size_t words, std::uint64_t seed);
std::string zipf_text(std::size_t bytes, const std::vector<std::string>& vocab, double exponent, std::uint64_t seed);

}  // namespace tandem::mapreduce
