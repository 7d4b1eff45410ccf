// Placeholder translation unit; replaced as the folder gains sources.
namespace plumb::rerank { int module_anchor = 0; }
