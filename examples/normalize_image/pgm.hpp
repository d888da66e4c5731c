// A grayscale PGM image (binary "P5"): 8-bit pixels (maxval below 256) or 16-bit big-endian
// pixels (maxval up to 65535), as netpbm defines it. Comments ('#' to the end of a line) may
// stand between the header's fields.
#pragma once

#include <cctype>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

struct Pgm {
  unsigned width = 0, height = 0, maxval = 255;
  std::vector<std::uint16_t> pixels;  // row by row
};

namespace pgm_detail {
// The next whole number of the header, after whitespace and comments.
inline unsigned header_number(std::istream& in, const std::string& path) {
  int c = in.get();
  while (c == '#' || std::isspace(c)) {
    if (c == '#')
      while (c != '\n' && c != EOF) c = in.get();
    c = in.get();
  }
  if (!std::isdigit(c)) throw std::runtime_error(path + ": not a binary PGM (P5) header");
  unsigned long value = 0;
  for (; std::isdigit(c); c = in.get()) {
    value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > 1u << 20) throw std::runtime_error(path + ": a header number is too large");
  }
  if (!std::isspace(c)) throw std::runtime_error(path + ": not a binary PGM (P5) header");
  return static_cast<unsigned>(value);  // the single whitespace after maxval has been read
}
}  // namespace pgm_detail

inline Pgm read_pgm(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  char magic[2] = {};
  if (!in.read(magic, 2) || magic[0] != 'P' || magic[1] != '5')
    throw std::runtime_error(path + ": not a binary PGM (P5) image");
  Pgm image;
  image.width = pgm_detail::header_number(in, path);
  image.height = pgm_detail::header_number(in, path);
  image.maxval = pgm_detail::header_number(in, path);
  if (image.width == 0 || image.height == 0 || image.maxval == 0 || image.maxval > 65535)
    throw std::runtime_error(path + ": width, height and maxval must be positive, maxval at most 65535");
  const std::size_t count = std::size_t{image.width} * image.height;
  const std::size_t bytes_per_pixel = image.maxval < 256 ? 1 : 2;
  std::vector<unsigned char> raw(count * bytes_per_pixel);
  if (!in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size())))
    throw std::runtime_error(path + ": the pixels end early");
  image.pixels.resize(count);
  for (std::size_t i = 0; i < count; ++i)
    image.pixels[i] = bytes_per_pixel == 1 ? raw[i] : static_cast<std::uint16_t>(raw[2 * i] << 8 | raw[2 * i + 1]);
  return image;
}

// Writes an 8-bit image (maxval 255).
inline void write_pgm(const std::string& path, unsigned width, unsigned height, const std::vector<std::uint8_t>& pixels) {
  std::ofstream out(path, std::ios::binary);
  out << "P5\n" << width << ' ' << height << "\n255\n";
  out.write(reinterpret_cast<const char*>(pixels.data()), static_cast<std::streamsize>(pixels.size()));
  if (!out.flush()) throw std::runtime_error(path + ": cannot write");
}
