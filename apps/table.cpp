#include "table.hpp"

#include <algorithm>
#include <cstdio>

namespace xr::cli {

namespace {
bool looks_numeric(const std::string& s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+') &&
         s.find_first_of("abcdfghjklmopqrstuvwyz:") == std::string::npos;
}
}  // namespace

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> width;
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    std::string line;
    for (std::size_t c = 0; c < rows_[r].size(); ++c) {
      const std::string& cell = rows_[r][c];
      const std::string pad(width[c] - cell.size(), ' ');
      line += (c ? "  " : "") + (r > 0 && looks_numeric(cell) ? pad + cell : cell + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  }
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

}  // namespace xr::cli
