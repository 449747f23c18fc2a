// The native half of the Node binding: a Handle owns one libshmkv handle and
// runs commands on it synchronously, in the calling thread.
//
// Replies come back in the shape the adapter hands to users, or one step
// from it: strings (UTF-8), Buffers or Latin-1 strings for JS to make
// Buffers of, as the caller asks; integers as numbers or decimal strings;
// nil as null; arrays as arrays; an error reply as an Error *value*
// (returned, not thrown). Only a failure of the call itself (no
// connection, bad arguments) throws.
//
// The module keeps no global state, so every worker thread that loads it
// gets its own class and opens its own handles.
#include <napi.h>

#include <shmkv.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace
{

// Bits of the `mode` argument.
constexpr uint32_t kBuffers = 1;    // strings and statuses as Buffers
constexpr uint32_t kIntStrings = 2; // integers as decimal strings
// Strings and statuses up to kLatin1Max bytes as Latin-1 strings (one JS
// character a byte, lossless), larger ones as Buffers. A Buffer made here
// costs over a microsecond (a backing store of its own, GC accounting);
// JS makes one from such a string with Buffer.from(s, 'latin1') out of
// its pool in a fraction of that.
constexpr uint32_t kLatin1 = 4;
constexpr size_t kLatin1Max = 4096;

// A key this long or shorter is converted on the stack.
constexpr size_t kStackKey = 256;

const char *CodeName(int rc)
{
    switch (rc) {
    case SHMKV_EINVAL:
        return "SHMKV_EINVAL";
    case SHMKV_ENOMEM:
        return "SHMKV_ENOMEM";
    case SHMKV_EIO:
        return "SHMKV_EIO";
    case SHMKV_EPROTO:
        return "SHMKV_EPROTO";
    case SHMKV_EREPLY:
        return "SHMKV_EREPLY";
    case SHMKV_ECONNECT:
        return "SHMKV_ECONNECT";
    default:
        return "SHMKV_ERROR";
    }
}

// Throws libshmkv's message for this thread's last error, with a code the
// adapter can test (it falls back to the socket on any of them).
Napi::Value Throw(Napi::Env env, int rc)
{
    Napi::Error e = Napi::Error::New(env, shmkv_errmsg());
    e.Set("code", Napi::String::New(env, CodeName(rc)));
    e.ThrowAsJavaScriptException();
    return env.Undefined();
}

Napi::Value ThrowType(Napi::Env env, const char *msg)
{
    Napi::TypeError::New(env, msg).ThrowAsJavaScriptException();
    return env.Undefined();
}

// Bytes as the mode asks: a Buffer, a Latin-1 carrier string, or UTF-8.
Napi::Value Bytes(Napi::Env env, const char *p, size_t n, uint32_t mode)
{
    if ((mode & kLatin1) && n <= kLatin1Max) {
        napi_value v;
        napi_create_string_latin1(env, p, n, &v);
        return Napi::Value(env, v);
    }
    if (mode & (kBuffers | kLatin1))
        return Napi::Buffer<char>::Copy(env, p, n);
    return Napi::String::New(env, p, n);
}

Napi::Value ToJs(Napi::Env env, const shmkv_reply *r, uint32_t mode)
{
    switch (r->type) {
    case SHMKV_REPLY_STRING:
    case SHMKV_REPLY_STATUS:
        return Bytes(env, r->str, r->len, mode);
    case SHMKV_REPLY_INTEGER:
        if (mode & kIntStrings)
            return Napi::String::New(env, std::to_string(r->integer));
        return Napi::Number::New(env, static_cast<double>(r->integer));
    case SHMKV_REPLY_ARRAY: {
        Napi::Array a = Napi::Array::New(env, r->elements);
        for (size_t i = 0; i < r->elements; i++)
            a.Set(static_cast<uint32_t>(i), ToJs(env, r->element[i], mode));
        return a;
    }
    case SHMKV_REPLY_ERROR:
        return Napi::Error::New(env, std::string(r->str, r->len)).Value();
    default:
        return env.Null();
    }
}

// Appends v's UTF-8 bytes to `a`. One N-API call when it fits in the room
// reserved: a result shorter than room - 4 cannot have been cut (a cut
// leaves at most 3 bytes of a character unused).
bool AppendUtf8(napi_env env, napi_value v, std::string &a, size_t *len)
{
    size_t off = a.size(), room = kStackKey, n = 0;
    a.resize(off + room);
    if (napi_get_value_string_utf8(env, v, &a[off], room, &n) != napi_ok)
        return false;
    if (n + 4 >= room) {
        napi_get_value_string_utf8(env, v, nullptr, 0, &n);
        a.resize(off + n + 1);
        napi_get_value_string_utf8(env, v, &a[off], n + 1, &n);
    }
    a.resize(off + n);
    *len = n;
    return true;
}

class Handle : public Napi::ObjectWrap<Handle>
{
  public:
    static Napi::Function Define(Napi::Env env)
    {
        return DefineClass(env, "Handle",
                           {
                               InstanceMethod<&Handle::Command>("command"),
                               InstanceMethod<&Handle::Get>("get"),
                               InstanceMethod<&Handle::Stats>("stats"),
                               InstanceMethod<&Handle::CacheError>("cacheError"),
                               InstanceMethod<&Handle::Close>("close"),
                           });
    }

    // new Handle(socketPath, {password, username, db, timeoutMs, noCache})
    explicit Handle(const Napi::CallbackInfo &info) : Napi::ObjectWrap<Handle>(info)
    {
        Napi::Env env = info.Env();
        if (!info[0].IsString()) {
            ThrowType(env, "Handle: the socket path must be a string");
            return;
        }
        std::string path = info[0].As<Napi::String>();
        std::string password, user;
        shmkv_opts o{};
        if (info.Length() > 1 && info[1].IsObject()) {
            Napi::Object opts = info[1].As<Napi::Object>();
            Napi::Value v = opts.Get("password");
            if (v.IsString()) {
                password = v.As<Napi::String>().Utf8Value();
                o.password = password.c_str();
            }
            v = opts.Get("username");
            if (v.IsString()) {
                user = v.As<Napi::String>().Utf8Value();
                o.user = user.c_str();
            }
            v = opts.Get("db");
            if (v.IsNumber())
                o.db = v.As<Napi::Number>().Uint32Value();
            v = opts.Get("timeoutMs");
            if (v.IsNumber())
                o.timeout_ms = v.As<Napi::Number>().Int32Value();
            o.no_cache = opts.Get("noCache").ToBoolean() ? 1 : 0;
        }
        int rc = shmkv_open(&h_, path.c_str(), &o);
        if (rc != SHMKV_OK) {
            h_ = nullptr;
            Throw(env, rc);
        }
    }

    ~Handle() override
    {
        shmkv_close(h_);
    }

  private:
    // command(args, mode): args are strings or Buffers, the command name first.
    Napi::Value Command(const Napi::CallbackInfo &info)
    {
        Napi::Env env = info.Env();
        if (!h_)
            return ThrowClosed(env);
        if (!info[0].IsArray())
            return ThrowType(env, "command: args must be an array");
        Napi::Array a = info[0].As<Napi::Array>();
        uint32_t n = a.Length();
        if (n == 0)
            return ThrowType(env, "command: no command name");
        uint32_t mode = info[1].IsNumber() ? info[1].As<Napi::Number>().Uint32Value() : 0;
        arena_.clear();
        argv_.resize(n);
        lens_.resize(n);
        off_.resize(n);
        for (uint32_t i = 0; i < n; i++) {
            Napi::Value v = a.Get(i);
            if (v.IsString()) {
                off_[i] = arena_.size();
                if (!AppendUtf8(env, v, arena_, &lens_[i]))
                    return env.Undefined();
            } else if (v.IsBuffer()) {
                Napi::Buffer<char> b = v.As<Napi::Buffer<char>>();
                off_[i] = SIZE_MAX;
                argv_[i] = b.Length() ? b.Data() : "";
                lens_[i] = b.Length();
            } else {
                return ThrowType(env, "command: arguments must be strings or Buffers");
            }
        }
        // Pointers into the arena only once it has stopped growing.
        for (uint32_t i = 0; i < n; i++)
            if (off_[i] != SIZE_MAX)
                argv_[i] = arena_.data() + off_[i];
        shmkv_reply *r = nullptr;
        int rc = shmkv_command(h_, &r, static_cast<int>(n), argv_.data(), lens_.data());
        if (rc != SHMKV_OK)
            return Throw(env, rc);
        Napi::Value out = ToJs(env, r, mode);
        shmkv_reply_free(r);
        return out;
    }

    // get(key, mode): GET on libshmkv's fast path (no reply object).
    Napi::Value Get(const Napi::CallbackInfo &info)
    {
        Napi::Env env = info.Env();
        if (!h_)
            return ThrowClosed(env);
        uint32_t mode = info[1].IsNumber() ? info[1].As<Napi::Number>().Uint32Value() : 0;
        char stack[kStackKey];
        std::string heap;
        const char *key;
        size_t klen = 0;
        if (info[0].IsString()) {
            if (napi_get_value_string_utf8(env, info[0], stack, sizeof stack, &klen) != napi_ok)
                return env.Undefined();
            key = stack;
            if (klen + 4 >= sizeof stack) {
                if (!AppendUtf8(env, info[0], heap, &klen))
                    return env.Undefined();
                key = heap.data();
            }
        } else if (info[0].IsBuffer()) {
            Napi::Buffer<char> b = info[0].As<Napi::Buffer<char>>();
            key = b.Length() ? b.Data() : "";
            klen = b.Length();
        } else {
            return ThrowType(env, "get: the key must be a string or a Buffer");
        }
        char *v = nullptr;
        size_t vlen = 0;
        int rc = shmkv_get(h_, key, klen, &v, &vlen);
        if (rc == SHMKV_NIL)
            return env.Null();
        if (rc == SHMKV_EREPLY) // WRONGTYPE: the daemon's words, as a value
            return Napi::Error::New(env, shmkv_errmsg()).Value();
        if (rc != SHMKV_OK)
            return Throw(env, rc);
        Napi::Value out = Bytes(env, v, vlen, mode);
        free(v);
        return out;
    }

    Napi::Value Stats(const Napi::CallbackInfo &info)
    {
        Napi::Env env = info.Env();
        if (!h_)
            return ThrowClosed(env);
        struct shmkv_stats st {
        }; // "struct": the function of that name hides the type
        shmkv_stats(h_, &st);
        Napi::Object o = Napi::Object::New(env);
        o.Set("hits", Napi::Number::New(env, static_cast<double>(st.hits)));
        o.Set("misses", Napi::Number::New(env, static_cast<double>(st.misses)));
        o.Set("retries", Napi::Number::New(env, static_cast<double>(st.retries)));
        o.Set("commands", Napi::Number::New(env, static_cast<double>(st.commands)));
        o.Set("attaches", Napi::Number::New(env, static_cast<double>(st.attaches)));
        return o;
    }

    // Why the shared-memory cache is not used, or null when it is.
    Napi::Value CacheError(const Napi::CallbackInfo &info)
    {
        Napi::Env env = info.Env();
        if (!h_)
            return ThrowClosed(env);
        const char *e = shmkv_cache_error(h_);
        return e ? Napi::Value(Napi::String::New(env, e)) : env.Null();
    }

    Napi::Value Close(const Napi::CallbackInfo &info)
    {
        shmkv_close(h_);
        h_ = nullptr;
        return info.Env().Undefined();
    }

    Napi::Value ThrowClosed(Napi::Env env)
    {
        Napi::Error e = Napi::Error::New(env, "the shmkv handle is closed");
        e.Set("code", Napi::String::New(env, "SHMKV_CLOSED"));
        e.ThrowAsJavaScriptException();
        return env.Undefined();
    }

    shmkv *h_ = nullptr;
    // Scratch space for command(), kept to spare an allocation per call.
    std::string arena_;
    std::vector<const char *> argv_;
    std::vector<size_t> lens_;
    std::vector<size_t> off_;
};

Napi::Object Init(Napi::Env env, Napi::Object exports)
{
    exports.Set("Handle", Handle::Define(env));
    exports.Set("BUFFERS", Napi::Number::New(env, kBuffers));
    exports.Set("INT_STRINGS", Napi::Number::New(env, kIntStrings));
    exports.Set("LATIN1", Napi::Number::New(env, kLatin1));
    return exports;
}

} // namespace

NODE_API_MODULE(shmkv, Init)
