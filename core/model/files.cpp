// files.cpp: see files.hpp.
#include "files.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#if !defined(__EMSCRIPTEN__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace attn {

// [SECTION] Errors ---------------------------------------------------------------------------

namespace {
std::string joined(const std::string& file, const std::string& where, const std::string& message) {
    std::string line = file;
    if (!where.empty()) line += (line.empty() ? "" : ": ") + where;
    return line + (line.empty() ? "" : ": ") + message;
}
}  // namespace

ModelError::ModelError(std::string file, std::string where, const std::string& message)
    : std::runtime_error(joined(file, where, message)), file_(std::move(file)), where_(std::move(where)) {}

// [SECTION] Bytes of one file ----------------------------------------------------------------

ByteBuffer::ByteBuffer(const std::uint8_t* bytes, std::size_t n) : ByteBuffer(n) {
    if (n) std::memcpy(data_.get(), bytes, n);
}

std::shared_ptr<const FileBytes> FileBytes::own(ByteBuffer bytes) {
    std::shared_ptr<FileBytes> f(new FileBytes());
    f->owned_ = std::move(bytes);
    f->data_ = f->owned_.data();
    f->size_ = f->file_size_ = f->owned_.size();
    return f;
}

std::shared_ptr<const FileBytes> FileBytes::borrow(const std::uint8_t* data, std::size_t size) {
    std::shared_ptr<FileBytes> f(new FileBytes());
    f->data_ = data;
    f->size_ = f->file_size_ = size;
    return f;
}

std::shared_ptr<const FileBytes> FileBytes::sliced(std::size_t file_size, ByteBuffer head) {
    std::shared_ptr<FileBytes> f(new FileBytes());
    f->owned_ = std::move(head);
    f->data_ = f->owned_.data();
    f->size_ = std::min(f->owned_.size(), file_size);
    f->file_size_ = file_size;
    return f;
}

#if defined(__EMSCRIPTEN__)
// In wasm (the node test suite's NODERAWFS) a file is read whole: there is no mmap to speak of.
std::shared_ptr<const FileBytes> FileBytes::map(const std::string& path, const std::string& shown) {
    std::FILE* fp = std::fopen(path.c_str(), "rb");
    if (!fp) throw ModelError(shown, "", std::string("cannot open: ") + std::strerror(errno));
    std::fseek(fp, 0, SEEK_END);
    long n = std::ftell(fp);
    std::fseek(fp, 0, SEEK_SET);
    ByteBuffer bytes(static_cast<std::size_t>(std::max(n, 0L)));
    bool ok = bytes.size() == 0 || std::fread(bytes.data(), 1, bytes.size(), fp) == bytes.size();
    std::fclose(fp);
    if (!ok) throw ModelError(shown, "", "cannot read it whole");
    return own(std::move(bytes));
}
FileBytes::~FileBytes() = default;
void FileBytes::done_with(std::size_t, std::size_t) const {}
#else
std::shared_ptr<const FileBytes> FileBytes::map(const std::string& path, const std::string& shown) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw ModelError(shown, "", std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw ModelError(shown, "", "not a regular file");
    }
    std::shared_ptr<FileBytes> f(new FileBytes());
    f->size_ = f->file_size_ = static_cast<std::size_t>(st.st_size);
    if (f->size_ > 0) {
        void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            ::close(fd);
            throw ModelError(shown, "", std::string("cannot map: ") + std::strerror(errno));
        }
        f->data_ = static_cast<const std::uint8_t*>(p);
        f->mapped_ = true;
    }
    ::close(fd);
    return f;
}

FileBytes::~FileBytes() {
    if (mapped_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

void FileBytes::done_with(std::size_t offset, std::size_t n) const {
    if (!mapped_ || offset >= size_) return;
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::size_t begin = (offset + page - 1) / page * page;  // whole pages inside the range only
    std::size_t end = std::min(size_, offset + n) / page * page;
    if (end > begin) ::madvise(const_cast<std::uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}
#endif

// [SECTION] A model's files ------------------------------------------------------------------

ModelFiles ModelFiles::from_folder(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(path, ec)) throw ModelError(path, "", "not a folder with config.json, model.safetensors and tokenizer files");
    ModelFiles out;
    out.folder = path;
    while (out.folder.size() > 1 && out.folder.back() == '/') out.folder.pop_back();
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
        if (!e.is_regular_file(ec)) continue;
        std::string name = e.path().filename().string();
        out.files[name] = FileBytes::map(e.path().string(), out.shown(name));
    }
    if (ec) throw ModelError(path, "", "cannot list the folder: " + ec.message());
    return out;
}

const FileBytes* ModelFiles::find(const std::string& name) const {
    auto it = files.find(name);
    return it == files.end() ? nullptr : it->second.get();
}

const FileBytes& ModelFiles::need(const std::string& name) const { return *share(name); }

std::shared_ptr<const FileBytes> ModelFiles::share(const std::string& name) const {
    auto it = files.find(name);
    if (it == files.end()) throw ModelError(shown(name), "", "missing");
    return it->second;
}

std::string ModelFiles::shown(const std::string& name) const { return folder.empty() ? name : folder + "/" + name; }

std::string ModelFiles::gguf() const {
    if (find("config.json")) return "";
    for (const auto& [name, bytes] : files)
        if (const std::uint8_t* magic = bytes->range(0, 4); magic && std::memcmp(magic, "GGUF", 4) == 0) return name;
    return "";
}

std::string gguf_file_for(const std::vector<std::string>& names, const std::string& quant, const std::string& shown) {
    const auto upper = [](std::string s) {
        for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return s;
    };
    const std::string q = upper(quant);
    std::vector<std::string> ggufs, picked;
    for (const std::string& name : names) {
        if (name.size() <= 5 || upper(name.substr(name.size() - 5)) != ".GGUF" || name.find('/') != std::string::npos) continue;
        ggufs.push_back(name);
        // quant as a whole part of the name: "Q4_K" is not "Q4_K_M"'s
        const std::string base = upper(name);
        for (std::size_t at = base.find(q); !q.empty() && at != std::string::npos; at = base.find(q, at + 1)) {
            const char before = at ? base[at - 1] : '-', after = base[at + q.size()];
            if (!std::isalnum(static_cast<unsigned char>(before)) && before != '_' && (after == '.' || after == '-')) {
                picked.push_back(name);
                break;
            }
        }
    }
    if (q.empty()) picked = ggufs;
    if (picked.size() == 1) return picked[0];
    if (ggufs.empty() && q.empty()) return "";
    const auto listed = [](const std::vector<std::string>& v) {
        std::string s;
        for (const std::string& x : v) (s += s.empty() ? "" : ", ") += x;
        return s;
    };
    if (ggufs.empty()) throw ModelError(shown, "--quant", "no .gguf file here to pick " + quant + " from");
    if (q.empty()) throw ModelError(shown, "--quant", std::to_string(ggufs.size()) + " .gguf files here: name one (" + listed(ggufs) + ")");
    if (picked.empty()) throw ModelError(shown, "--quant", "no .gguf file is " + quant + "; there are " + listed(ggufs));
    throw ModelError(shown, "--quant", std::to_string(picked.size()) + " .gguf files are " + quant + ": " + listed(picked));
}

void ModelFiles::keep_gguf(const std::string& quant) {
    std::vector<std::string> names;
    for (const auto& [name, bytes] : files) names.push_back(name);
    const std::string keep = gguf_file_for(names, quant, folder);
    if (keep.empty()) return;
    for (auto it = files.begin(); it != files.end();)
        it = it->first != keep && it->first.ends_with(".gguf") ? files.erase(it) : std::next(it);
}

ModelFiles ModelFiles::from_gguf(const std::string& path) {
    const auto slash = path.find_last_of('/');
    ModelFiles out;
    out.folder = slash == std::string::npos ? "" : path.substr(0, slash);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    out.files[name] = FileBytes::map(path, path);
    out.label = name.ends_with(".gguf") ? name.substr(0, name.size() - 5) : name;
    if (out.gguf().empty()) throw ModelError(path, "", "not a GGUF file: give a model's folder, a .gguf file, a built-in model or a Hub id");
    return out;
}

}  // namespace attn
