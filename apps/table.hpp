// A plain text table: columns sized to their widest cell, numbers right-aligned.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace xr::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string fixed(double value, int decimals);

}  // namespace xr::cli
