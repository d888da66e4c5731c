// The --json FILE of the benchmark drivers: one JSON document, read by scripts/plot.py.
#pragma once

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

// Writes `doc` to `path`; false (after one line on stderr naming `program`) when it cannot.
inline bool write_json_file(const std::string& path, const nlohmann::json& doc, const char* program) {
  std::ofstream file(path);
  file << doc.dump(2) << '\n';
  file.close();
  if (file) return true;
  std::fprintf(stderr, "%s: cannot write %s\n", program, path.c_str());
  return false;
}
