// Start Swagger UI on Lens' own OpenAPI document; kept in a file so the page needs no inline script.
window.addEventListener("load", function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({ url: root.getAttribute("data-openapi-url"), dom_id: "#swagger-ui", deepLinking: true });
});
