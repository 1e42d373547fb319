// A tiny semantic search with a sentence-transformers model folder (config.json, model.safetensors,
// tokenizer.json): embed a few sentences and a query, print the sentences by cosine similarity.
// Usage: semantic_search MODEL_DIR [QUERY]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "nn/bert.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [QUERY]\n", argv[0]);
    return 2;
  }
  std::vector<std::string> docs = {"A man is eating food.",
                                   "A man is riding a horse.",
                                   "The new movie is awesome.",
                                   "The cat sits outside on the mat.",
                                   "Stock markets fell sharply on Monday.",
                                   "A woman is playing the violin."};
  std::string query = argc > 2 ? argv[2] : "Someone is having a meal.";
  try {
    tg::nn::SentenceEncoder enc = tg::nn::SentenceEncoder::load(argv[1]);
    docs.push_back(query);
    std::vector<float> e = enc.encode(docs).to_vector<float>();  // unit rows: a dot product is the cosine
    size_t dim = e.size() / docs.size(), q = docs.size() - 1;
    std::vector<std::pair<float, size_t>> ranked;
    for (size_t i = 0; i < q; i++) {
      float dot = 0;
      for (size_t k = 0; k < dim; k++) dot += e[i * dim + k] * e[q * dim + k];
      ranked.emplace_back(dot, i);
    }
    std::sort(ranked.rbegin(), ranked.rend());
    std::printf("query: %s\n", query.c_str());
    for (auto [score, i] : ranked) std::printf("%.4f  %s\n", score, docs[i].c_str());
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "semantic_search: %s\n", e.what());
    return 1;
  }
  return 0;
}
