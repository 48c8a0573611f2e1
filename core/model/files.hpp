// files.hpp: a model's files (config.json, model.safetensors, tokenizer files) as bytes, and the
// one error every reader of them throws.
//
// Natively the files of a folder are memory-mapped (a 500 MB checkpoint is not read into memory
// before it is converted); in the browser they are the bytes of the files the user gave.
//
// [SECTION] Errors
// [SECTION] Bytes of one file
// [SECTION] A model's files
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// [SECTION] Errors ---------------------------------------------------------------------------

// Bad model input, as one line (SPEC.md §5): "FILE: WHERE: MESSAGE", e.g.
// "gpt2/model.safetensors: h.3.attn.c_attn.weight: expected shape [768, 2304], got [768, 768]".
// FILE is the path as the user named it (folder/file); WHERE the tensor, field or token, or "".
class ModelError : public std::runtime_error {
public:
    ModelError(std::string file, std::string where, const std::string& message);
    const std::string& file() const { return file_; }
    const std::string& where() const { return where_; }

private:
    std::string file_, where_;
};

// [SECTION] Bytes of one file ----------------------------------------------------------------

// Bytes written before they are read (a file's, as it arrives in the page): not zeroed when
// made, and freed at once. A std::vector zeroes every byte on resize and, in wasm, walks them
// all again when destroyed: 1.1 s and 0.13 s for GPT-2 small's 498 MB in Chromium.
class ByteBuffer {
public:
    explicit ByteBuffer(std::size_t n = 0) : data_(n ? new std::uint8_t[n] : nullptr), size_(n) {}
    ByteBuffer(const std::uint8_t* bytes, std::size_t n);  // a copy of n bytes
    std::uint8_t* data() { return data_.get(); }
    const std::uint8_t* data() const { return data_.get(); }
    std::size_t size() const { return size_; }

private:
    std::unique_ptr<std::uint8_t[]> data_;
    std::size_t size_ = 0;
};

// Read-only bytes of one file: a private read-only memory map (natively), owned bytes, or bytes
// compiled into the program; or, sliced, only the file's first bytes (the page's checkpoint:
// its header, the rest read a range at a time into the loader's window, transformer.hpp).
class FileBytes {
public:
    // Maps `path` read-only. Throws ModelError(shown, "", "cannot open: …") when it cannot.
    static std::shared_ptr<const FileBytes> map(const std::string& path, const std::string& shown);
    static std::shared_ptr<const FileBytes> own(ByteBuffer bytes);
    // Bytes that outlive every reader (a built-in model's, compiled into the program).
    static std::shared_ptr<const FileBytes> borrow(const std::uint8_t* data, std::size_t size);
    // A file of `file_size` bytes of which only the first, `head`, are held (at most file_size).
    static std::shared_ptr<const FileBytes> sliced(std::size_t file_size, ByteBuffer head);
    ~FileBytes();
    FileBytes(const FileBytes&) = delete;
    FileBytes& operator=(const FileBytes&) = delete;

    // The bytes held from the file's start: all of them, but a sliced file's head.
    const std::uint8_t* data() const { return data_; }
    std::size_t size() const { return size_; }
    std::string_view text() const { return {reinterpret_cast<const char*>(data_), size_}; }
    std::size_t file_size() const { return file_size_; }  // size(), but for a sliced file
    // The bytes [begin, end) when they are held (begin ≤ end), else nullptr.
    const std::uint8_t* range(std::size_t begin, std::size_t end) const { return end <= size_ ? data_ + begin : nullptr; }
    // The bytes [offset, offset + n) will not be read again: a mapped file gives their pages
    // back (madvise DONTNEED), so converting a checkpoint does not hold it twice in memory.
    void done_with(std::size_t offset, std::size_t n) const;

private:
    FileBytes() = default;
    const std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0, file_size_ = 0;
    [[maybe_unused]] bool mapped_ = false;  // (the page maps nothing)
    ByteBuffer owned_;
};

// [SECTION] A model's files ------------------------------------------------------------------

// The files of one model by name ("config.json", "model.safetensors", "vocab.json", …).
struct ModelFiles {
    std::string folder;  // as the user named it; messages say folder/name
    std::string label;   // the model's name when its config gives none, if not the folder's: a
                         // GGUF file's stem, ollama:NAME:TAG
    std::map<std::string, std::shared_ptr<const FileBytes>> files;

    // Maps every regular file of `path` (not recursive). Throws ModelError when `path` is not a
    // readable folder.
    static ModelFiles from_folder(const std::string& path);
    const FileBytes* find(const std::string& name) const;  // nullptr when absent
    // The file or a ModelError(shown(name), "", "missing").
    const FileBytes& need(const std::string& name) const;
    std::shared_ptr<const FileBytes> share(const std::string& name) const;  // need(), shared
    std::string shown(const std::string& name) const;  // "folder/name" (or "name" without a folder)
    // A GGUF model: the name of its file that starts with GGUF's magic when there is no
    // config.json (ollama's blobs have no .gguf in their names), else "".
    std::string gguf() const;
    // A folder of several .gguf files (a Hub repo's quantizations, LM Studio's ORG/REPO): keeps
    // the one gguf_file_for picks, drops the others. Throws ModelError(folder, "--quant", …).
    void keep_gguf(const std::string& quant);
    // The files of one GGUF file (`path`; throws ModelError when it cannot be mapped or is not a
    // GGUF file): the folder is the file's, so messages name the file by its path.
    static ModelFiles from_gguf(const std::string& path);
};

// Of a repo's or folder's file names, the .gguf file at its top for `quant` (a part of its name,
// "Q4_K_M", matched whole and in any case), or the only .gguf when quant is ""; "" when there is none.
// Throws ModelError(shown, "--quant", …) naming the files there are when none or several match.
std::string gguf_file_for(const std::vector<std::string>& names, const std::string& quant, const std::string& shown);

}  // namespace attn
