// IntArrayRef and DimVector: how shapes are passed and stored.
//
// IntArrayRef is a non-owning view of int64 values (sizes, strides, dims). It binds to braced
// lists (`t.view({2, 3})`), std::vector and DimVector. Like std::span it must not outlive what it
// views; a braced list lives until the end of the full expression, which is enough for arguments.
//
// DimVector stores up to kInlineDims values inside the object and spills to the heap beyond
// that, so tensors of ordinary rank cost no extra allocation for their sizes and strides.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <vector>

namespace grove {

class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(const std::int64_t* data, std::size_t size) : data_(data), size_(size) {}
  template <std::size_t N>
  constexpr IntArrayRef(const std::int64_t (&array)[N]) : data_(array), size_(N) {}  // NOLINT
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  // The list outlives the call it is an argument of; that is all an IntArrayRef needs.
  IntArrayRef(std::initializer_list<std::int64_t> list)  // NOLINT: implicit on purpose
      : data_(list.begin()), size_(list.size()) {}
#pragma GCC diagnostic pop
  IntArrayRef(const std::vector<std::int64_t>& vector)  // NOLINT
      : data_(vector.data()), size_(vector.size()) {}

  const std::int64_t* data() const {
    return data_;
  }
  std::size_t size() const {
    return size_;
  }
  bool empty() const {
    return size_ == 0;
  }
  const std::int64_t* begin() const {
    return data_;
  }
  const std::int64_t* end() const {
    return data_ + size_;
  }
  std::int64_t operator[](std::size_t i) const {
    return data_[i];
  }
  std::int64_t back() const {
    return data_[size_ - 1];
  }
  std::vector<std::int64_t> vec() const {
    return {begin(), end()};
  }
  friend bool operator==(IntArrayRef a, IntArrayRef b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  const std::int64_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// Prints as [2, 3, 4].
std::ostream& operator<<(std::ostream& out, IntArrayRef values);

class DimVector {
 public:
  static constexpr std::size_t kInlineDims = 6;

  DimVector() = default;
  explicit DimVector(std::size_t size, std::int64_t value = 0) { assign(size, value); }
  DimVector(IntArrayRef values) { assign(values); }  // NOLINT: implicit on purpose
  DimVector(std::initializer_list<std::int64_t> list) : DimVector(IntArrayRef(list)) {}
  DimVector(const DimVector& other) { assign(other); }
  DimVector& operator=(const DimVector& other) {
    if (this != &other) assign(other);
    return *this;
  }
  DimVector(DimVector&& other) noexcept { *this = std::move(other); }
  DimVector& operator=(DimVector&& other) noexcept {
    if (other.heap_) {
      heap_ = std::move(other.heap_);
      capacity_ = other.capacity_;
      size_ = other.size_;
      other.capacity_ = kInlineDims;
      other.size_ = 0;
    } else {
      assign(IntArrayRef(other));
    }
    return *this;
  }

  operator IntArrayRef() const { return IntArrayRef(data(), size_); }  // NOLINT
  std::int64_t* data() { return heap_ ? heap_.get() : inline_; }
  const std::int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::int64_t& operator[](std::size_t i) { return data()[i]; }
  std::int64_t operator[](std::size_t i) const { return data()[i]; }
  std::int64_t* begin() { return data(); }
  std::int64_t* end() { return data() + size_; }
  const std::int64_t* begin() const { return data(); }
  const std::int64_t* end() const { return data() + size_; }
  std::int64_t back() const { return data()[size_ - 1]; }

  void assign(IntArrayRef values) {
    reserve(values.size());
    std::copy(values.begin(), values.end(), data());
    size_ = values.size();
  }
  void assign(std::size_t size, std::int64_t value) {
    reserve(size);
    std::fill_n(data(), size, value);
    size_ = size;
  }
  void resize(std::size_t size, std::int64_t value = 0) {
    reserve(size);
    if (size > size_) std::fill(data() + size_, data() + size, value);
    size_ = size;
  }
  void push_back(std::int64_t value) {
    reserve(size_ + 1);
    data()[size_++] = value;
  }
  void insert(std::size_t position, std::int64_t value) {
    reserve(size_ + 1);
    std::int64_t* values = data();
    std::copy_backward(values + position, values + size_, values + size_ + 1);
    values[position] = value;
    ++size_;
  }
  void erase(std::size_t position) {
    std::int64_t* values = data();
    std::copy(values + position + 1, values + size_, values + position);
    --size_;
  }

 private:
  void reserve(std::size_t wanted) {
    if (wanted > capacity_) grow(wanted);
  }
  // Out of line on purpose: growing is rare, and keeping the copy out of every caller stops
  // GCC 13's -Warray-bounds from reasoning about it with the caller's (small) arrays.
  [[gnu::noinline]] void grow(std::size_t wanted) {
    auto grown = std::make_unique<std::int64_t[]>(wanted);
    std::copy(data(), data() + size_, grown.get());
    heap_ = std::move(grown);
    capacity_ = wanted;
  }

  std::int64_t inline_[kInlineDims];  // only [0, size_) is meaningful
  std::unique_ptr<std::int64_t[]> heap_;
  std::size_t capacity_ = kInlineDims;
  std::size_t size_ = 0;
};

}  // namespace grove
