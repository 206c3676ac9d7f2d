/** The UI's one stylesheet, served at /ui/assets/ui.css (no inline style: the Content-Security-Policy forbids it). */
export const STYLESHEET = `
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330;background:#f5f6f8}
header{display:flex;flex-wrap:wrap;align-items:center;gap:.4rem 1.5rem;padding:.6rem 1.2rem;background:#1d2330;color:#fff}
header a{color:#cfd6e4;text-decoration:none}header a:hover,header a.on{color:#fff}
header .brand{font-weight:700;color:#fff;margin-right:1rem}
header form{margin-left:auto}header .who{color:#9aa4b8}
main{max-width:1200px;margin:1.2rem auto;padding:0 1.2rem;overflow-wrap:break-word}
.scroll{overflow-x:auto;max-width:100%}
h1{font-size:1.35rem;margin:.2rem 0 1rem}h2{font-size:1.1rem;margin:1.4rem 0 .6rem}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dfe3ea}
th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #eceff4;vertical-align:top}
th{background:#f0f2f6;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#fff;border:1px solid #dfe3ea;padding:.6rem;overflow:auto;max-height:28rem;white-space:pre-wrap;word-break:break-word}
.cards{display:flex;flex-wrap:wrap;gap:.8rem}.card{background:#fff;border:1px solid #dfe3ea;padding:.7rem 1rem;min-width:10rem}
.card b{display:block;font-size:1.4rem}a.card{color:inherit;text-decoration:none}a.card:hover{border-color:#8c9ab3}a.card b{color:#1f5fbf}
form.inline{display:inline}form.stack label{display:block;margin:.4rem 0}
input,select,button{font:inherit;padding:.25rem .45rem}button{cursor:pointer}
.notice{background:#e8f4ea;border:1px solid #b6dcbc;padding:.5rem .8rem;margin:.6rem 0}
.error{background:#fbeaea;border:1px solid #e6b3b3;padding:.5rem .8rem;margin:.6rem 0}
.muted{color:#6a7385}.badge{padding:.05rem .4rem;border-radius:.2rem;background:#e6e9f0}
.bad{background:#f8d7d7}.good{background:#d8f0dc}
.filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end;margin-bottom:.8rem}
.filters label{display:flex;flex-direction:column;font-size:.85rem}
.tabs{display:flex;gap:1rem;margin:0 0 .7rem;border-bottom:1px solid #dfe3ea}.tabs a{padding:.3rem 0;text-decoration:none}
.tabs a.on{font-weight:600;color:#1d2330;border-bottom:2px solid #1f5fbf}
ul.summary{background:#fff;border:1px solid #dfe3ea;margin:0 0 .8rem;padding:.5rem .8rem .5rem 1.8rem}
.side-by-side{display:grid;grid-template-columns:repeat(auto-fit,minmax(18rem,1fr));gap:1rem}
.replay-diff td pre{margin:0;max-height:12rem}
.refresh{color:#6a7385;font-size:.85rem;margin:-.6rem 0 .6rem}
.charts{display:flex;flex-wrap:wrap;gap:.8rem}.charts svg{background:#fff;border:1px solid #dfe3ea;max-width:100%;height:auto}
.diagram{overflow-x:auto;background:#fff;border:1px solid #dfe3ea;padding:.4rem}.diagram svg{display:block}
.login{max-width:22rem;margin:5rem auto;background:#fff;border:1px solid #dfe3ea;padding:1.4rem}
input,select{max-width:100%}
@media (max-width:600px){
header{gap:.3rem .9rem;padding:.5rem .7rem}header .brand{margin-right:.2rem}
header form{margin-left:0;flex-basis:100%;display:flex;align-items:center;gap:.6rem}
main{margin:.8rem auto;padding:0 .7rem}
.card{min-width:0;flex:1 1 8rem}
.filters,form.stack{flex-direction:column;align-items:stretch}
.filters label,form.stack label,.filters input,.filters select,form.stack input,form.stack select{width:100%}
.login{margin:2rem .7rem}
}
`;
