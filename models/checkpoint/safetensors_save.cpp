// save_safetensors (safetensors.h): check the names and dtypes, lay the tensors out, write the
// header with a placeholder checksum, stream each tensor's bytes while computing the checksum,
// then patch the header with it and commit the file.
//
// Invariants: every error a user can cause is raised before the temporary file exists; the
// placeholder and the real checksum have the same length ("00000000" vs 8 hex digits), so
// patching the header never moves the data.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/checkpoint/atomic_file.h"
#include "models/checkpoint/safetensors.h"
#include "models/checkpoint/safetensors_format.h"

namespace grove::checkpoint {
namespace {

using OrderedJson = nlohmann::ordered_json;

// Where one tensor goes: its index in the caller's list, its dtype's entry and its byte range
// in the data section.
struct Placement {
  std::size_t index = 0;
  const detail::SafetensorsDType* dtype = nullptr;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

bool is_valid_utf8(const std::string& text) {
  try {
    (void)OrderedJson(text).dump(-1, ' ', false, OrderedJson::error_handler_t::strict);
    return true;
  } catch (const OrderedJson::type_error&) {
    return false;
  }
}

void check_arguments(const NamedTensors& tensors,
                     const std::map<std::string, std::string>& metadata) {
  std::map<std::string_view, std::size_t> first_index;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, tensor] = tensors[i];
    GROVE_CHECK(!name.empty(), "save_safetensors: expected a name for every tensor, but tensor #",
                i, " of ", tensors.size(), " has an empty one; names are the file's keys");
    GROVE_CHECK(name != "__metadata__", "save_safetensors: tensor #", i,
                " is named \"__metadata__\", the key safetensors reserves for the metadata; "
                "rename it");
    GROVE_CHECK(is_valid_utf8(name), "save_safetensors: the name of tensor #", i,
                " is not valid UTF-8; safetensors headers are UTF-8 JSON");
    const auto [previous, inserted] = first_index.emplace(name, i);
    GROVE_CHECK(inserted, "save_safetensors: expected unique names, but '", name,
                "' names tensors #", previous->second, " and #", i,
                "; a file holds one tensor per name");
    GROVE_CHECK(tensor.defined(), "save_safetensors: tensor '", name,
                "' is undefined; save only tensors that hold data");
    GROVE_CHECK(detail::find_safetensors_dtype(tensor.dtype()) != nullptr,
                "save_safetensors: tensor '", name, "' has dtype ", tensor.dtype(),
                ", which safetensors cannot store; convert it with to(dtype) first");
  }
  for (const auto& [key, value] : metadata) {
    GROVE_CHECK(key != kDataChecksumKey, "save_safetensors: the metadata key '", key,
                "' is reserved: save writes the data's checksum there; remove it from the "
                "metadata (load_safetensors never returns it)");
    GROVE_CHECK(is_valid_utf8(key) && is_valid_utf8(value), "save_safetensors: metadata entry '",
                key, "' is not valid UTF-8; safetensors headers are UTF-8 JSON");
  }
}

// The reference writer's order: element size, largest first, then name. Every tensor then
// starts at a multiple of its element size, since the data section starts at a multiple of 8.
std::vector<Placement> lay_out(const NamedTensors& tensors) {
  std::vector<Placement> placements(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    placements[i].index = i;
    placements[i].dtype = detail::find_safetensors_dtype(tensors[i].second.dtype());
  }
  std::sort(placements.begin(), placements.end(), [&](const Placement& a, const Placement& b) {
    if (a.dtype->element_size != b.dtype->element_size) {
      return a.dtype->element_size > b.dtype->element_size;
    }
    return tensors[a.index].first < tensors[b.index].first;
  });
  std::uint64_t offset = 0;
  for (Placement& placement : placements) {
    placement.begin = offset;
    offset += tensors[placement.index].second.nbytes();
    placement.end = offset;
  }
  return placements;
}

// The header's JSON, padded with spaces to a multiple of kDataAlignment bytes.
std::string make_header(const NamedTensors& tensors, const std::vector<Placement>& placements,
                        const std::map<std::string, std::string>& metadata,
                        const std::string& checksum) {
  std::map<std::string, std::string> all_metadata = metadata;
  all_metadata.emplace(std::string(kDataChecksumKey), checksum);
  OrderedJson header = OrderedJson::object();
  OrderedJson& metadata_json = header["__metadata__"];
  metadata_json = OrderedJson::object();
  for (const auto& [key, value] : all_metadata) metadata_json[key] = value;
  for (const Placement& placement : placements) {
    const Tensor& tensor = tensors[placement.index].second;
    OrderedJson entry = OrderedJson::object();
    entry["dtype"] = placement.dtype->name;
    entry["shape"] = tensor.sizes().vec();
    entry["data_offsets"] = {placement.begin, placement.end};
    header[tensors[placement.index].first] = std::move(entry);
  }
  std::string text = header.dump(-1, ' ', false, OrderedJson::error_handler_t::strict);
  const std::size_t padded =
      (text.size() + detail::kDataAlignment - 1) / detail::kDataAlignment * detail::kDataAlignment;
  text.resize(padded, ' ');
  GROVE_CHECK(text.size() <= detail::kMaxHeaderBytes, "save_safetensors: the header would be ",
              text.size(), " bytes, above the ", detail::kMaxHeaderBytes,
              " that safetensors readers accept; save fewer tensors or less metadata per file");
  return text;
}

}  // namespace

void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  check_arguments(tensors, metadata);
  const std::vector<Placement> placements = lay_out(tensors);
  const std::string placeholder_header =
      make_header(tensors, placements, metadata, detail::crc32_hex(0));

  AtomicFileWriter writer(path);
  unsigned char length[8];
  detail::encode_u64_little_endian(placeholder_header.size(), length);
  writer.write(length, sizeof(length));
  writer.write(placeholder_header);
  std::uint32_t crc = 0;
  for (const Placement& placement : placements) {
    // One host copy at a time: a model on a GPU is never duplicated whole in host memory.
    const Tensor host = tensors[placement.index].second.to(kCPU).contiguous();
    const std::size_t nbytes = host.nbytes();
    GROVE_INTERNAL_ASSERT(nbytes == placement.end - placement.begin);
    if (nbytes == 0) continue;
    crc = detail::update_crc32(crc, host.data_ptr(), nbytes);
    writer.write(host.data_ptr(), nbytes);
  }
  const std::string header = make_header(tensors, placements, metadata, detail::crc32_hex(crc));
  GROVE_INTERNAL_ASSERT(header.size() == placeholder_header.size());
  writer.write_at(sizeof(length), header.data(), header.size());
  writer.commit();
}

std::string_view safetensors_dtype_name(DType dtype) {
  const detail::SafetensorsDType* entry = detail::find_safetensors_dtype(dtype);
  GROVE_CHECK(entry != nullptr, "safetensors_dtype_name: dtype ", dtype,
              " has no safetensors name; convert the tensor with to(dtype) first");
  return entry->name;
}

}  // namespace grove::checkpoint
