#include "rerank/pytorch_checkpoint.hpp"

#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/checkpoint_format.hpp"

namespace plumb::rerank {

namespace {

// Element types of torch storages we can turn into tensors.
enum class Elem { F32, F16, BF16, F64, I64, I32, Unsupported };

std::size_t elem_size(Elem e) {
    switch (e) {
        case Elem::F32:
            return 4;
        case Elem::F16:
            return 2;
        case Elem::BF16:
            return 2;
        case Elem::F64:
            return 8;
        case Elem::I64:
            return 8;
        case Elem::I32:
            return 4;
        case Elem::Unsupported:
            break;
    }
    return 0;
}

enum class Global {
    OrderedDict,
    RebuildTensorV2,
    RebuildTensor,
    RebuildParameter,
    RebuildParameterWithState,
    Storage,
};

struct AllowedGlobal {
    const char* module;
    const char* name;
    Global global;
    Elem elem;
};

// The allow-list: everything a state dict written by torch.save needs, nothing that runs code.
constexpr AllowedGlobal kAllowed[] = {
    {"collections", "OrderedDict", Global::OrderedDict, Elem::Unsupported},
    {"torch._utils", "_rebuild_tensor_v2", Global::RebuildTensorV2, Elem::Unsupported},
    {"torch._utils", "_rebuild_tensor", Global::RebuildTensor, Elem::Unsupported},
    {"torch._utils", "_rebuild_parameter", Global::RebuildParameter, Elem::Unsupported},
    {"torch._utils", "_rebuild_parameter_with_state", Global::RebuildParameterWithState,
     Elem::Unsupported},
    {"torch", "FloatStorage", Global::Storage, Elem::F32},
    {"torch", "HalfStorage", Global::Storage, Elem::F16},
    {"torch", "BFloat16Storage", Global::Storage, Elem::BF16},
    {"torch", "DoubleStorage", Global::Storage, Elem::F64},
    {"torch", "LongStorage", Global::Storage, Elem::I64},
    {"torch", "IntStorage", Global::Storage, Elem::I32},
    // Storages we recognise but cannot turn into plumb tensors (an error names the tensor).
    {"torch", "BoolStorage", Global::Storage, Elem::Unsupported},
    {"torch", "ByteStorage", Global::Storage, Elem::Unsupported},
    {"torch", "CharStorage", Global::Storage, Elem::Unsupported},
    {"torch", "ShortStorage", Global::Storage, Elem::Unsupported},
};

// A name from the file, safe to print: control and non-ASCII bytes as \xNN, at most 80 bytes.
std::string printable(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < 80; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f) {
            out.push_back(static_cast<char>(c));
        } else {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        }
    }
    if (s.size() > 80) out += "...";
    return out;
}

enum class Kind { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor };

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::None:
            return "None";
        case Kind::Bool:
            return "a bool";
        case Kind::Int:
            return "an int";
        case Kind::Float:
            return "a float";
        case Kind::String:
            return "a string";
        case Kind::Tuple:
            return "a tuple";
        case Kind::List:
            return "a list";
        case Kind::Dict:
            return "a dict";
        case Kind::Global:
            return "a global";
        case Kind::Storage:
            return "a storage";
        case Kind::Tensor:
            return "a tensor";
    }
    return "?";
}

// A pickle value. Values live in an arena and refer to each other by raw pointer, so neither
// cycles (a list appended to itself) nor deep nesting can leak or overflow the stack on
// destruction.
struct Value {
    Kind kind = Kind::None;
    std::int64_t i = 0;         // Int, Bool; Storage: numel; Tensor: storage offset
    double f = 0;               // Float
    std::string s;              // String (also bytes); Storage: key; Global: "module.name"
    std::vector<Value*> items;  // Tuple, List; Dict: key, value, key, value, ...
    Global global = Global::OrderedDict;
    Elem elem = Elem::Unsupported;            // Storage / Global::Storage
    const Value* storage = nullptr;           // Tensor
    std::vector<std::int64_t> shape, stride;  // Tensor
};

class Unpickler {
public:
    Unpickler(std::string file, std::string_view data) : m_file(std::move(file)), m_data(data) {}

    Value* run();

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw CheckpointError(m_file + ": data.pkl byte " + std::to_string(m_op_pos) + ": " + what);
    }

    Value* make(Kind k) {
        m_arena.emplace_back();
        m_arena.back().kind = k;
        return &m_arena.back();
    }

    const char* take(std::size_t n) {
        if (n > m_data.size() - m_pos) fail("the pickle is truncated");
        const char* p = m_data.data() + m_pos;
        m_pos += n;
        return p;
    }
    std::uint64_t read_le(std::size_t n) {
        const auto* p = reinterpret_cast<const unsigned char*>(take(n));
        std::uint64_t v = 0;
        for (std::size_t k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(p[k]) << (8 * k);
        return v;
    }
    std::string read_string(std::size_t n) { return std::string(take(n), n); }
    std::string read_line() {
        const auto end = m_data.find('\n', m_pos);
        if (end == std::string_view::npos) fail("the pickle is truncated");
        std::string s(m_data.substr(m_pos, end - m_pos));
        m_pos = end + 1;
        return s;
    }

    Value* pop() {
        if (m_stack.size() <= (m_marks.empty() ? 0 : m_marks.back())) {
            fail("malformed pickle (stack underflow)");
        }
        Value* v = m_stack.back();
        m_stack.pop_back();
        return v;
    }
    Value* top() {
        if (m_stack.size() <= (m_marks.empty() ? 0 : m_marks.back())) {
            fail("malformed pickle (stack underflow)");
        }
        return m_stack.back();
    }
    // Items above the last mark, which is removed.
    std::vector<Value*> pop_mark() {
        if (m_marks.empty()) fail("malformed pickle (no mark)");
        const std::size_t start = m_marks.back();
        m_marks.pop_back();
        std::vector<Value*> items(m_stack.begin() + static_cast<std::ptrdiff_t>(start),
                                  m_stack.end());
        m_stack.resize(start);
        return items;
    }

    Value* global(const std::string& module, const std::string& name);
    Value* reduce(Value* callable, Value* args);
    Value* persistent(Value* pid);
    void memo_put(std::uint64_t id) { m_memo[id] = top(); }
    Value* memo_get(std::uint64_t id) {
        auto it = m_memo.find(id);
        if (it == m_memo.end())
            fail("malformed pickle (memo entry " + std::to_string(id) + " unset)");
        return it->second;
    }
    Value* expect(Value* v, Kind k, const char* what) {
        if (v->kind != k) {
            fail(std::string(what) + " is " + kind_name(v->kind) + ", expected " + kind_name(k));
        }
        return v;
    }
    std::vector<std::int64_t> int_tuple(Value* v, const char* what) {
        expect(v, Kind::Tuple, what);
        std::vector<std::int64_t> out;
        for (Value* e : v->items) out.push_back(expect(e, Kind::Int, what)->i);
        return out;
    }

    std::string m_file;
    std::string_view m_data;
    std::size_t m_pos = 0;
    std::size_t m_op_pos = 0;
    std::deque<Value> m_arena;
    std::vector<Value*> m_stack;
    std::vector<std::size_t> m_marks;
    std::unordered_map<std::uint64_t, Value*> m_memo;
    std::unordered_map<std::string, Value*> m_storages;
    std::size_t m_copied = 0;  // items copied by OrderedDict(list)
};

Value* Unpickler::global(const std::string& module, const std::string& name) {
    for (const auto& a : kAllowed) {
        if (module == a.module && name == a.name) {
            Value* v = make(Kind::Global);
            v->global = a.global;
            v->elem = a.elem;
            v->s = module + "." + name;
            return v;
        }
    }
    fail("the pickle references the global '" + printable(module + "." + name) +
         "', which a state dict never needs; plumb does not run code from checkpoints "
         "(allowed: collections.OrderedDict, torch._utils._rebuild_tensor_v2, "
         "_rebuild_tensor, _rebuild_parameter, torch.*Storage)");
}

Value* Unpickler::persistent(Value* pid) {
    expect(pid, Kind::Tuple, "a persistent id");
    const auto& a = pid->items;
    if (a.size() != 5 || a[0]->kind != Kind::String || a[0]->s != "storage") {
        fail("unknown persistent id (expected ('storage', type, key, location, numel))");
    }
    if (a[1]->kind != Kind::Global || a[1]->global != Global::Storage) {
        fail("the storage type of a persistent id is " + std::string(kind_name(a[1]->kind)) +
             ", expected torch.<Type>Storage");
    }
    const std::string& key = expect(a[2], Kind::String, "a storage key")->s;
    expect(a[3], Kind::String, "a storage location");
    const std::int64_t numel = expect(a[4], Kind::Int, "a storage size")->i;
    if (numel < 0) fail("storage '" + printable(key) + "' has a negative size");
    auto it = m_storages.find(key);
    if (it != m_storages.end()) {
        if (it->second->elem != a[1]->elem || it->second->i != numel) {
            fail("storage '" + printable(key) +
                 "' is referenced with two different types or sizes");
        }
        return it->second;
    }
    Value* s = make(Kind::Storage);
    s->s = key;
    s->i = numel;
    s->elem = a[1]->elem;
    s->storage = a[1];  // the storage type, for messages
    m_storages.emplace(key, s);
    return s;
}

Value* Unpickler::reduce(Value* callable, Value* args) {
    if (callable->kind != Kind::Global) fail("REDUCE on " + std::string(kind_name(callable->kind)));
    expect(args, Kind::Tuple, "the argument of REDUCE");
    const auto& a = args->items;
    switch (callable->global) {
        case Global::OrderedDict: {
            Value* d = make(Kind::Dict);
            if (a.empty()) return d;
            if (a.size() != 1 || a[0]->kind != Kind::List) {
                fail("collections.OrderedDict called with unexpected arguments");
            }
            // Copies of memoised lists could otherwise grow quadratically with the file.
            m_copied += a[0]->items.size();
            if (m_copied > m_data.size()) fail("malformed pickle (too many dict items)");
            for (Value* pair : a[0]->items) {
                if (pair->kind != Kind::Tuple || pair->items.size() != 2) {
                    fail("collections.OrderedDict called with a list that is not of pairs");
                }
                d->items.push_back(pair->items[0]);
                d->items.push_back(pair->items[1]);
            }
            return d;
        }
        case Global::RebuildTensorV2:
        case Global::RebuildTensor: {
            const std::size_t need = callable->global == Global::RebuildTensorV2 ? 6 : 4;
            if (a.size() < need || a.size() > 7) {
                fail(callable->s + " called with " + std::to_string(a.size()) + " arguments");
            }
            Value* t = make(Kind::Tensor);
            t->storage = expect(a[0], Kind::Storage, "the storage of a tensor");
            t->i = expect(a[1], Kind::Int, "a tensor's storage offset")->i;
            t->shape = int_tuple(a[2], "a tensor's size");
            t->stride = int_tuple(a[3], "a tensor's stride");
            if (t->shape.size() != t->stride.size()) {
                fail("a tensor's size and stride have different lengths");
            }
            return t;
        }
        case Global::RebuildParameter:
        case Global::RebuildParameterWithState: {
            if (a.size() < 3 || a[0]->kind != Kind::Tensor) {
                fail(callable->s + " called without a tensor");
            }
            return a[0];
        }
        case Global::Storage:
            break;
    }
    fail(callable->s + " cannot be called");
}

Value* Unpickler::run() {
    while (true) {
        m_op_pos = m_pos;
        const auto op = static_cast<unsigned char>(*take(1));
        switch (op) {
            case 0x80: {  // PROTO
                const auto proto = static_cast<unsigned char>(*take(1));
                if (proto < 2 || proto > 5)
                    fail("unsupported pickle protocol " + std::to_string(proto));
                break;
            }
            case 0x95:
                take(8);
                break;   // FRAME: framing is only a read-ahead hint
            case '.': {  // STOP
                if (m_stack.size() != 1 || !m_marks.empty()) fail("malformed pickle at STOP");
                return m_stack.back();
            }
            case '(':
                m_marks.push_back(m_stack.size());
                break;  // MARK
            case '0':
                pop();
                break;  // POP
            case '1':
                pop_mark();
                break;  // POP_MARK
            case '2':
                m_stack.push_back(top());
                break;  // DUP
            case 'N':
                m_stack.push_back(make(Kind::None));
                break;
            case 0x88:
            case 0x89: {  // NEWTRUE, NEWFALSE
                Value* v = make(Kind::Bool);
                v->i = op == 0x88;
                m_stack.push_back(v);
                break;
            }
            case 'J':
            case 'K':
            case 'M': {  // BININT (signed 4), BININT1, BININT2
                Value* v = make(Kind::Int);
                if (op == 'J') {
                    v->i = static_cast<std::int32_t>(static_cast<std::uint32_t>(read_le(4)));
                } else {
                    v->i = static_cast<std::int64_t>(read_le(op == 'K' ? 1 : 2));
                }
                m_stack.push_back(v);
                break;
            }
            case 0x8a:
            case 0x8b: {  // LONG1, LONG4: little-endian two's complement
                const std::uint64_t n = read_le(op == 0x8a ? 1 : 4);
                if (n > 8) fail("integer wider than 64 bits");
                std::uint64_t u = read_le(static_cast<std::size_t>(n));
                if (n > 0 && n < 8 && ((u >> (8 * n - 1)) & 1u) != 0)
                    u |= ~std::uint64_t{0} << (8 * n);
                Value* v = make(Kind::Int);
                v->i = static_cast<std::int64_t>(u);
                m_stack.push_back(v);
                break;
            }
            case 'G': {  // BINFLOAT, big-endian double
                const auto* p = reinterpret_cast<const unsigned char*>(take(8));
                std::uint64_t u = 0;
                for (int k = 0; k < 8; ++k) u = (u << 8) | p[k];
                Value* v = make(Kind::Float);
                std::memcpy(&v->f, &u, 8);
                m_stack.push_back(v);
                break;
            }
            case 'X':
            case 0x8c:
            case 0x8d:
            case 'T':
            case 'U':
            case 'B':
            case 'C':
            case 0x8e: {  // BINUNICODE(4/1/8), BINSTRING(4/1), BINBYTES(4/1/8)
                std::size_t len_bytes = 4;
                if (op == 0x8c || op == 'U' || op == 'C') len_bytes = 1;
                if (op == 0x8d || op == 0x8e) len_bytes = 8;
                const std::uint64_t n = read_le(len_bytes);
                if (n > m_data.size() - m_pos) fail("the pickle is truncated");
                Value* v = make(Kind::String);
                v->s = read_string(static_cast<std::size_t>(n));
                m_stack.push_back(v);
                break;
            }
            case ')':
                m_stack.push_back(make(Kind::Tuple));
                break;   // EMPTY_TUPLE
            case 't': {  // TUPLE
                Value* v = make(Kind::Tuple);
                v->items = pop_mark();
                m_stack.push_back(v);
                break;
            }
            case 0x85:
            case 0x86:
            case 0x87: {  // TUPLE1..3
                const std::size_t n = op - 0x84u;
                Value* v = make(Kind::Tuple);
                v->items.resize(n);
                for (std::size_t k = n; k-- > 0;) v->items[k] = pop();
                m_stack.push_back(v);
                break;
            }
            case ']':
                m_stack.push_back(make(Kind::List));
                break;   // EMPTY_LIST
            case 'l': {  // LIST
                Value* v = make(Kind::List);
                v->items = pop_mark();
                m_stack.push_back(v);
                break;
            }
            case 'a': {  // APPEND
                Value* item = pop();
                expect(top(), Kind::List, "the target of APPEND")->items.push_back(item);
                break;
            }
            case 'e': {  // APPENDS
                auto items = pop_mark();
                Value* list = expect(top(), Kind::List, "the target of APPENDS");
                list->items.insert(list->items.end(), items.begin(), items.end());
                break;
            }
            case '}':
                m_stack.push_back(make(Kind::Dict));
                break;   // EMPTY_DICT
            case 'd': {  // DICT
                auto items = pop_mark();
                if (items.size() % 2) fail("malformed pickle (odd number of dict items)");
                Value* v = make(Kind::Dict);
                v->items = std::move(items);
                m_stack.push_back(v);
                break;
            }
            case 's': {  // SETITEM
                Value* value = pop();
                Value* key = pop();
                Value* dict = expect(top(), Kind::Dict, "the target of SETITEM");
                dict->items.push_back(key);
                dict->items.push_back(value);
                break;
            }
            case 'u': {  // SETITEMS
                auto items = pop_mark();
                if (items.size() % 2) fail("malformed pickle (odd number of dict items)");
                Value* dict = expect(top(), Kind::Dict, "the target of SETITEMS");
                dict->items.insert(dict->items.end(), items.begin(), items.end());
                break;
            }
            case 'q':
                memo_put(read_le(1));
                break;  // BINPUT
            case 'r':
                memo_put(read_le(4));
                break;  // LONG_BINPUT
            case 0x94:
                memo_put(m_memo.size());
                break;  // MEMOIZE
            case 'h':
                m_stack.push_back(memo_get(read_le(1)));
                break;  // BINGET
            case 'j':
                m_stack.push_back(memo_get(read_le(4)));
                break;   // LONG_BINGET
            case 'c': {  // GLOBAL "module\nname\n"
                std::string module = read_line();
                std::string name = read_line();
                m_stack.push_back(global(module, name));
                break;
            }
            case 0x93: {  // STACK_GLOBAL
                Value* name = pop();
                Value* module = pop();
                if (module->kind != Kind::String || name->kind != Kind::String) {
                    fail("STACK_GLOBAL without two strings");
                }
                m_stack.push_back(global(module->s, name->s));
                break;
            }
            case 'R': {  // REDUCE
                Value* args = pop();
                Value* callable = pop();
                m_stack.push_back(reduce(callable, args));
                break;
            }
            case 'b': {  // BUILD: attribute state of an OrderedDict (`_metadata`) or a tensor
                pop();
                Value* obj = top();
                if (obj->kind != Kind::Dict && obj->kind != Kind::Tensor) {
                    fail("BUILD on " + std::string(kind_name(obj->kind)));
                }
                break;
            }
            case 'Q':
                m_stack.push_back(persistent(pop()));
                break;  // BINPERSID
            default: {
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02x", op);
                fail(std::string("pickle opcode ") + hex +
                     " is not allowed in a state dict (plumb reads tensors, dicts, lists, "
                     "tuples and plain values only)");
            }
        }
    }
}

std::string c10_message(const c10::Error& e) { return e.what_without_backtrace(); }

}  // namespace

std::map<std::string, TensorData> read_pytorch_state_dict(const std::filesystem::path& path) {
    const std::string file = path.string();
    {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(path, ec)) {
            throw IoError(file + ": cannot open (no such file)");
        }
    }
    {
        std::string detail;
        const auto format = sniff_checkpoint_format(path, &detail);
        if (format != CheckpointFormat::PytorchZip) {
            throw CheckpointError(wrong_format_message(
                path, format, "a PyTorch zip checkpoint (torch.save)", detail));
        }
    }
    std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
    std::string pickle;
    try {
        reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(file);
        if (!reader->hasRecord("data.pkl")) {
            throw CheckpointError(file +
                                  ": the zip archive holds no data.pkl (not a torch.save "
                                  "checkpoint)");
        }
        if (reader->hasRecord("byteorder")) {
            auto [ptr, size] = reader->getRecord("byteorder");
            const std::string order(static_cast<const char*>(ptr.get()), size);
            if (order != "little") {
                throw CheckpointError(file + ": byte order '" + order + "' is not supported");
            }
        }
        auto [ptr, size] = reader->getRecord("data.pkl");
        pickle.assign(static_cast<const char*>(ptr.get()), size);
    } catch (const c10::Error& e) {
        throw CheckpointError(file +
                              ": cannot read the PyTorch zip archive (truncated or "
                              "corrupt?): " +
                              c10_message(e));
    }

    Unpickler unpickler(file, pickle);
    const Value* root = unpickler.run();
    if (root->kind != Kind::Dict) {
        throw CheckpointError(file + ": holds " + kind_name(root->kind) +
                              ", expected a state dict (name -> tensor)");
    }
    // A training checkpoint may wrap the state dict.
    auto has_tensor = [](const Value* d) {
        for (std::size_t k = 1; k < d->items.size(); k += 2) {
            if (d->items[k]->kind == Kind::Tensor) return true;
        }
        return false;
    };
    if (!has_tensor(root)) {
        for (std::size_t k = 0; k + 1 < root->items.size(); k += 2) {
            const Value* key = root->items[k];
            if (key->kind == Kind::String &&
                (key->s == "state_dict" || key->s == "model_state_dict" || key->s == "model") &&
                root->items[k + 1]->kind == Kind::Dict) {
                root = root->items[k + 1];
                break;
            }
        }
    }

    std::map<std::string, TensorData> out;
    std::unordered_map<std::string, std::pair<at::DataPtr, std::size_t>> records;
    std::uint64_t total_record_bytes = 0, total_out_bytes = 0;
    // A storage's bytes are dropped after its last tensor: peak memory stays near one copy.
    std::unordered_map<std::string, std::size_t> uses;
    for (std::size_t k = 1; k < root->items.size(); k += 2) {
        if (root->items[k]->kind == Kind::Tensor) ++uses[root->items[k]->storage->s];
    }
    for (std::size_t k = 0; k + 1 < root->items.size(); k += 2) {
        const Value* key = root->items[k];
        const Value* value = root->items[k + 1];
        if (key->kind != Kind::String || !is_valid_utf8(key->s)) {
            throw CheckpointError(file + ": state dict key " + std::to_string(k / 2) +
                                  " is not a UTF-8 string");
        }
        const std::string& name = key->s;
        if (value->kind != Kind::Tensor) {
            throw CheckpointError(file + ": state dict entry '" + name + "' holds " +
                                  kind_name(value->kind) + ", expected a tensor");
        }
        const Value* storage = value->storage;
        const Elem elem = storage->elem;
        if (elem == Elem::Unsupported) {
            throw CheckpointError(file + ": tensor '" + name + "' is stored as " +
                                  storage->storage->s +
                                  "; plumb reads float, half, bfloat16, double, long and int");
        }
        const std::size_t es = elem_size(elem);
        // Storage bytes, read once per key.
        auto rec = records.find(storage->s);
        if (rec == records.end()) {
            try {
                const std::string record = "data/" + storage->s;
                if (!reader->hasRecord(record)) {
                    throw CheckpointError(file + ": tensor '" + name + "': storage record '" +
                                          printable(record) + "' is missing from the archive");
                }
                auto [ptr, size] = reader->getRecord(record);
                total_record_bytes += size;
                rec = records.emplace(storage->s, std::make_pair(std::move(ptr), size)).first;
            } catch (const c10::Error& e) {
                throw CheckpointError(file + ": tensor '" + name +
                                      "': cannot read its storage: " + c10_message(e));
            }
        }
        const auto* bytes = static_cast<const std::byte*>(rec->second.first.get());
        const std::size_t record_size = rec->second.second;
        const std::int64_t storage_numel = storage->i;
        std::uint64_t storage_bytes = 0;
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(storage_numel), es, &storage_bytes) ||
            storage_bytes > record_size) {
            throw CheckpointError(
                file + ": tensor '" + name + "': storage '" + printable(storage->s) +
                "' declares " + std::to_string(storage_numel) + " elements but its record holds " +
                std::to_string(record_size) + " bytes");
        }
        // The view must lie inside the storage.
        const auto& shape = value->shape;
        const auto& stride = value->stride;
        const std::int64_t offset = value->i;
        std::int64_t numel = 1;
        std::int64_t last = offset;  // highest element index touched
        bool bad = offset < 0;
        for (std::size_t d = 0; d < shape.size(); ++d) {
            if (shape[d] < 0 || stride[d] < 0) bad = true;
            if (bad) break;
            std::int64_t span = 0;
            if (__builtin_mul_overflow(numel, shape[d], &numel) ||
                (shape[d] > 0 && __builtin_mul_overflow(shape[d] - 1, stride[d], &span)) ||
                __builtin_add_overflow(last, span, &last)) {
                bad = true;
            }
        }
        if (!bad && numel > 0 && last >= storage_numel) bad = true;
        std::uint64_t tensor_bytes = 0;
        if (!bad && __builtin_mul_overflow(static_cast<std::uint64_t>(numel), es, &tensor_bytes)) {
            bad = true;
        }
        if (bad) {
            throw CheckpointError(
                file + ": tensor '" + name + "': view (offset " + std::to_string(offset) +
                ", size " + shape_string(shape) + ", stride " + shape_string(stride) +
                ") lies outside its storage of " + std::to_string(storage_numel) + " elements");
        }
        total_out_bytes += tensor_bytes;
        if (total_out_bytes > 4 * total_record_bytes + (64u << 20)) {
            throw CheckpointError(file + ": tensor '" + name +
                                  "': the state dict's views expand "
                                  "far beyond its stored data (broadcast strides?)");
        }

        TensorData t;
        t.shape = shape;
        switch (elem) {
            case Elem::F32:
                t.dtype = DType::F32;
                break;
            case Elem::F16:
                t.dtype = DType::F16;
                break;
            case Elem::BF16:
                t.dtype = DType::BF16;
                break;
            case Elem::F64:
                t.dtype = DType::F32;
                break;
            case Elem::I64:
                t.dtype = DType::I64;
                break;
            case Elem::I32:
                t.dtype = DType::I32;
                break;
            case Elem::Unsupported:
                break;
        }
        const std::size_t n = static_cast<std::size_t>(numel);
        t.bytes.resize(n * dtype_size(t.dtype));
        // Element by element in row-major order of the view (contiguous views in one copy).
        auto put = [&](std::size_t out_index, std::int64_t src_index) {
            const std::byte* src = bytes + static_cast<std::size_t>(src_index) * es;
            if (elem == Elem::F64) {
                double d;
                std::memcpy(&d, src, 8);
                const float fl = static_cast<float>(d);
                std::memcpy(t.bytes.data() + out_index * 4, &fl, 4);
            } else {
                std::memcpy(t.bytes.data() + out_index * es, src, es);
            }
        };
        bool contiguous = true;
        {
            std::int64_t expect_stride = 1;
            for (std::size_t d = shape.size(); d-- > 0;) {
                if (shape[d] != 1 && stride[d] != expect_stride) contiguous = false;
                expect_stride *= shape[d];
            }
        }
        if (n > 0 && contiguous && elem != Elem::F64) {
            std::memcpy(t.bytes.data(), bytes + static_cast<std::size_t>(offset) * es, n * es);
        } else if (n > 0) {
            std::vector<std::int64_t> idx(shape.size(), 0);
            std::int64_t src = offset;
            for (std::size_t o = 0; o < n; ++o) {
                put(o, src);
                for (std::size_t d = shape.size(); d-- > 0;) {
                    if (++idx[d] < shape[d]) {
                        src += stride[d];
                        break;
                    }
                    src -= stride[d] * (shape[d] - 1);
                    idx[d] = 0;
                }
            }
        }
        out.insert_or_assign(name, std::move(t));
        if (--uses[storage->s] == 0) records.erase(storage->s);
    }
    return out;
}

}  // namespace plumb::rerank
