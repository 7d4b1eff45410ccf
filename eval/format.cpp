#include "eval/format.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "plugin/error.hpp"

namespace plumb::eval {

OutputFormat parse_output_format(const std::string& name) {
    if (name == "text" || name == "trec") return OutputFormat::Text;
    if (name == "json") return OutputFormat::Json;
    if (name == "csv") return OutputFormat::Csv;
    throw ConfigError("unknown output format '" + name + "' (known: text, json, csv)");
}

namespace {

/// One trec_eval line (meas_print_single.c / meas_print_final.c).
void text_line(std::string& out, const std::string& name, const std::string& qid, double value,
               ValueKind kind) {
    char buf[512];
    int n;
    if (kind == ValueKind::Long) {
        n = std::snprintf(buf, sizeof buf, "%-22s\t%s\t%ld\n", name.c_str(), qid.c_str(),
                          static_cast<long>(value));
    } else {
        n = std::snprintf(buf, sizeof buf, "%-22s\t%s\t%6.4f\n", name.c_str(), qid.c_str(), value);
    }
    if (n >= 0 && static_cast<std::size_t>(n) < sizeof buf) {
        out.append(buf, static_cast<std::size_t>(n));
    } else {  // very long qid: fall back to fmt
        out += fmt::format("{:<22}\t{}\t", name, qid);
        out += kind == ValueKind::Long ? fmt::format("{}\n", static_cast<long>(value))
                                       : fmt::format("{:6.4f}\n", value);
    }
}

std::string format_text(const EvalResult& r, const FormatOptions& o) {
    std::string out;
    if (o.per_query) {
        for (const auto& q : r.queries) {
            for (std::size_t c = 0; c < r.columns.size(); ++c) {
                if (!r.columns[c].per_query) continue;
                if (r.columns[c].kind == ValueKind::Text) {  // m_relstring.c
                    out += fmt::format("{:<22}\t{}\t'{}'\n", r.columns[c].name, q.qid, q.relstring);
                    continue;
                }
                text_line(out, r.columns[c].name, q.qid, q.values[c], r.columns[c].kind);
            }
        }
    }
    if (o.summary) {
        if (r.has_runid) out += fmt::format("{:<22}\t{}\t{}\n", "runid", "all", r.run_id);
        for (std::size_t c = 0; c < r.columns.size(); ++c) {
            if (r.columns[c].kind == ValueKind::Text) continue;  // per query only
            text_line(out, r.columns[c].name, "all", r.summary[c], r.columns[c].kind);
        }
    }
    return out;
}

nlohmann::ordered_json json_value(double v, ValueKind kind) {
    if (kind == ValueKind::Long) return static_cast<long>(v);
    return v;
}

std::string csv_field(const std::string& s);

std::string format_json(const EvalResult& r, const FormatOptions& o) {
    nlohmann::ordered_json j;
    j["run_id"] = r.run_id;
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (const auto& c : r.columns) names.push_back(c.name);
    j["measures"] = names;
    if (o.per_query) {
        nlohmann::ordered_json qs = nlohmann::ordered_json::object();
        for (const auto& q : r.queries) {
            nlohmann::ordered_json row = nlohmann::ordered_json::object();
            for (std::size_t c = 0; c < r.columns.size(); ++c) {
                if (!r.columns[c].per_query) continue;
                if (r.columns[c].kind == ValueKind::Text) {
                    row[r.columns[c].name] = q.relstring;
                } else {
                    row[r.columns[c].name] = json_value(q.values[c], r.columns[c].kind);
                }
            }
            qs[q.qid] = row;
        }
        j["queries"] = qs;
    }
    if (o.summary) {
        nlohmann::ordered_json all = nlohmann::ordered_json::object();
        for (std::size_t c = 0; c < r.columns.size(); ++c) {
            if (r.columns[c].kind == ValueKind::Text) continue;
            all[r.columns[c].name] = json_value(r.summary[c], r.columns[c].kind);
        }
        j["all"] = all;
    }
    return j.dump(2) + "\n";
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

void csv_line(std::string& out, const std::string& name, const std::string& qid, double v,
              ValueKind kind) {
    out += csv_field(name);
    out += ',';
    out += csv_field(qid);
    out += ',';
    out += kind == ValueKind::Long ? fmt::format("{}", static_cast<long>(v)) : fmt::format("{}", v);
    out += '\n';
}

std::string format_csv(const EvalResult& r, const FormatOptions& o) {
    std::string out = "measure,qid,value\n";
    if (o.per_query) {
        for (const auto& q : r.queries) {
            for (std::size_t c = 0; c < r.columns.size(); ++c) {
                if (!r.columns[c].per_query) continue;
                if (r.columns[c].kind == ValueKind::Text) {
                    out += csv_field(r.columns[c].name) + "," + csv_field(q.qid) + "," +
                           csv_field(q.relstring) + "\n";
                    continue;
                }
                csv_line(out, r.columns[c].name, q.qid, q.values[c], r.columns[c].kind);
            }
        }
    }
    if (o.summary) {
        if (r.has_runid) out += "runid,all," + csv_field(r.run_id) + "\n";
        for (std::size_t c = 0; c < r.columns.size(); ++c) {
            if (r.columns[c].kind == ValueKind::Text) continue;
            csv_line(out, r.columns[c].name, "all", r.summary[c], r.columns[c].kind);
        }
    }
    return out;
}

}  // namespace

std::string format_result(const EvalResult& result, OutputFormat format,
                          const FormatOptions& options) {
    switch (format) {
        case OutputFormat::Text:
            return format_text(result, options);
        case OutputFormat::Json:
            return format_json(result, options);
        case OutputFormat::Csv:
            return format_csv(result, options);
    }
    return {};
}

}  // namespace plumb::eval
